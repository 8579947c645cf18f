package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	clientv3 "go.etcd.io/etcd/client/v3"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/test/harness"
)

// nodeClient is a clientset authenticated as the kubelet of node name.
func nodeClient(t testing.TB, s *harness.Server, name string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", harness.NodeKubeconfig(t, s, name))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func wantStatus(t testing.TB, what string, err error, forbidden bool) {
	t.Helper()
	switch {
	case forbidden && !apierrors.IsForbidden(err):
		t.Errorf("%s: %v, want 403 Forbidden", what, err)
	case !forbidden && err != nil:
		t.Errorf("%s: %v, want success", what, err)
	}
}

// TestIntegrationAuthNodeCredentials: a kubelet's credentials reach its
// own Node, the pods bound to it and the Secrets those pods use, and
// nothing of any other node (the Node authorizer, RBAC's system:node role
// and NodeRestriction together).
func TestIntegrationAuthNodeCredentials(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	admin := s.Clientset(t)
	ctx := context.Background()
	for _, n := range []string{"n1", "n2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"used", "unused"} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": "v"}}
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node, secret string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if secret != "" {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		}
		return p
	}
	for _, p := range []*corev1.Pod{pod("on-n1", "n1", "used"), pod("on-n2", "n2", "")} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n1 := nodeClient(t, s, "n1")
	// The Node authorizer learns from the bus which pods run where.
	harness.Eventually(t, 15*time.Second, func() error {
		_, err := n1.CoreV1().Secrets("default").Get(ctx, "used", metav1.GetOptions{})
		return err
	})
	self, err := n1.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	wantStatus(t, "n1 gets its Node", err, false)
	if err == nil {
		self.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}
		_, err = n1.CoreV1().Nodes().UpdateStatus(ctx, self, metav1.UpdateOptions{})
		wantStatus(t, "n1 updates its own Node status", err, false)
	}
	other, err := admin.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "Forged"}}
	_, err = n1.CoreV1().Nodes().UpdateStatus(ctx, other, metav1.UpdateOptions{})
	wantStatus(t, "n1 updates n2's status", err, true)
	other.Labels = map[string]string{"forged": "yes"}
	_, err = n1.CoreV1().Nodes().Update(ctx, other, metav1.UpdateOptions{})
	wantStatus(t, "n1 updates n2", err, true)
	_, err = n1.CoreV1().Secrets("default").Get(ctx, "unused", metav1.GetOptions{})
	wantStatus(t, "n1 reads a Secret no pod of its uses", err, true)
	_, err = n1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, "n1 lists Secrets", err, true)
	err = n1.CoreV1().Pods("default").Delete(ctx, "on-n2", metav1.DeleteOptions{})
	wantStatus(t, "n1 deletes a pod of n2", err, true)
	p2, err := admin.CoreV1().Pods("default").Get(ctx, "on-n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p2.Status.Phase = corev1.PodFailed
	_, err = n1.CoreV1().Pods("default").UpdateStatus(ctx, p2, metav1.UpdateOptions{})
	wantStatus(t, "n1 writes the status of a pod of n2", err, true)
	// Its own pod's status is its to write.
	p1, err := admin.CoreV1().Pods("default").Get(ctx, "on-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1.Status.Phase = corev1.PodRunning
	_, err = n1.CoreV1().Pods("default").UpdateStatus(ctx, p1, metav1.UpdateOptions{})
	wantStatus(t, "n1 writes the status of its own pod", err, false)
	// A node asks for tokens only for the audiences its pods use, or
	// those RBAC grants it (upstream's ServiceAccountNodeAudienceRestriction).
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vault := pod("vault-n1", "n1", "")
	vault.Spec.ServiceAccountName = "robot"
	vault.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}}}}}}}
	vault, err = admin.CoreV1().Pods("default").Create(ctx, vault, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenFor := func(audience string) error {
		_, err := n1.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{audience},
			BoundObjectRef: &authnv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: vault.Name, UID: vault.UID}}}, metav1.CreateOptions{})
		return err
	}
	harness.Eventually(t, 15*time.Second, func() error { return tokenFor("vault") })
	err = tokenFor("registry")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `audience "registry" not found in pod spec volume, system:node:n1 is not authorized`) {
		t.Errorf("n1 asks for a token for an audience its pod does not use: %v, want 403", err)
	}
	grant := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-registry-audience"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"request-serviceaccounts-token-audience"}, APIGroups: []string{""}, Resources: []string{"registry"}}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, grant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-registry-audience"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:nodes"}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 15*time.Second, func() error { return tokenFor("registry") })

	// Once the pod that used the Secret is gone, so is the node's access.
	if err := admin.CoreV1().Pods("default").Delete(ctx, "on-n1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 15*time.Second, func() error {
		_, err := n1.CoreV1().Secrets("default").Get(ctx, "used", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("reading the Secret of a deleted pod: %v, want 403", err)
		}
		return nil
	})
}

// TestIntegrationAuthAdmission: PodSecurity's restricted level refuses a
// privileged pod with upstream's message, tightening a namespace warns
// about its pods, and a ResourceQuota of 3 pods refuses the fourth with
// upstream's "exceeded quota".
func TestIntegrationAuthAdmission(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-scheduler")
	cs := s.Clientset(t)
	ctx := context.Background()
	restricted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, restricted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, cs, "locked")
	priv := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &priv}}}}}
	_, err := cs.CoreV1().Pods("locked").Create(ctx, p, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`) {
		t.Errorf("privileged pod in a restricted namespace: %v", err)
	}

	// Tightening a namespace's enforce level warns about the pods it
	// already runs, as upstream's dry run of the label shows users.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lax"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, cs, "lax")
	if _, err := cs.CoreV1().Pods("lax").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("privileged pod in an unlabelled namespace: %v", err)
	}
	// The API server lists the namespace's pods from its bus-fed cache.
	harness.Eventually(t, 15*time.Second, func() error {
		warnings := &warningRecorder{}
		cfg := s.RESTConfig(t)
		cfg.WarningHandler = warnings
		wcs := kubernetes.NewForConfigOrDie(cfg)
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`)
		if _, err := wcs.CoreV1().Namespaces().Patch(ctx, "lax", types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return err
		}
		want := []string{`existing pods in namespace "lax" violate the new PodSecurity enforce level "baseline:latest"`, `root: privileged`}
		if got := warnings.all(); !slices.Equal(got, want) {
			return fmt.Errorf("warnings of the dry-run relabel: %q, want %q", got, want)
		}
		return nil
	})
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, "lax", metav1.GetOptions{}); err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "" {
		t.Errorf("the dry run changed the namespace: %v %v", ns.Labels, err)
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "quota"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, cs, "quota")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}}}
	if _, err := cs.CoreV1().ResourceQuotas("quota").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota controller fills status.hard and status.used.
	harness.Eventually(t, 15*time.Second, func() error {
		got, err := cs.CoreV1().ResourceQuotas("quota").Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := got.Status.Used[corev1.ResourcePods]; !ok || got.Status.Hard.Pods().Value() != 3 {
			return fmt.Errorf("quota status not computed yet: %+v", got.Status)
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("quota").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %d of 3: %v", i+1, err)
		}
	}
	fourth := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p3"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err = cs.CoreV1().Pods("quota").Create(ctx, fourth, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "p3" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3`) {
		t.Errorf("the 4th pod under a quota of 3: %v", err)
	}
	got, err := cs.CoreV1().ResourceQuotas("quota").Get(ctx, "pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; used.Value() != 3 {
		t.Errorf("quota used = %s, want 3", used.String())
	}
}

// warningRecorder is a client-go WarningHandler that keeps the warnings.
type warningRecorder struct {
	mu  sync.Mutex
	got []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

func waitDefaultSA(t testing.TB, cs kubernetes.Interface, ns string) {
	t.Helper()
	harness.Eventually(t, 15*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err
	})
}

var etcdEndpointLine = regexp.MustCompile(`embedded etcd ready"? endpoint=(\S+)`)

// serverEtcd is a client of the server's embedded etcd, as the API server
// connects to it, closed when the test ends.
func serverEtcd(t *testing.T, s *harness.Server) *clientv3.Client {
	t.Helper()
	m := etcdEndpointLine.FindStringSubmatch(s.Logs())
	if m == nil {
		t.Fatalf("no etcd endpoint in the server's log")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m[1]}, TLS: s.EtcdTLS(t), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// TestIntegrationAuthSecretsAtRest: kubebus server encrypts Secrets in
// etcd by default (upstream's k8s:enc: envelope), the API returns the
// plaintext, and the bus carries Secrets without their data.
func TestIntegrationAuthSecretsAtRest(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	k := harness.Kubectl(t)
	s.MustRun(t, k, "", "create", "secret", "generic", "vault", "--from-literal=password=hunter2-plaintext")
	out := s.MustRun(t, k, "", "get", "secret", "vault", "-o", "jsonpath={.data.password}")
	if out != "aHVudGVyMi1wbGFpbnRleHQ=" {
		t.Errorf("kubectl get secret: %q, want the plaintext's base64", out)
	}
	cli := serverEtcd(t, s)
	resp, err := cli.Get(context.Background(), "/registry/core/secrets/default/vault")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the Secret from etcd: %v %v", resp, err)
	}
	raw := resp.Kvs[0].Value
	if !bytes.HasPrefix(raw, []byte("k8s:enc:")) || bytes.Contains(raw, []byte("hunter2")) || bytes.Contains(raw, []byte("aHVudGVyMi1wbGFpbnRleHQ")) {
		t.Errorf("the Secret in etcd is not encrypted: %q", raw[:min(len(raw), 80)])
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "pki", "encryption-config.yaml")); err != nil {
		t.Errorf("no generated encryption config: %v", err)
	}
	// The tap, as admin, shows the Secret without its data.
	tap, err := runKubebus(t, "tap", "--kubeconfig", s.Kubeconfig, "--resource", "secrets", "--since", "1", "--follow=false", "-o", "json")
	if err != nil {
		t.Fatalf("kubebus tap: %v\n%s", err, tap)
	}
	if !strings.Contains(tap, `"vault"`) || strings.Contains(tap, "hunter2") || strings.Contains(tap, "aHVudGVyMi1wbGFpbnRleHQ") {
		t.Errorf("the tap shows Secret data or not the Secret:\n%s", tap)
	}

	// kubectl apply keeps a copy of what it applied in an annotation; the
	// bus carries neither it nor the data, in any message of any stream.
	applied := filepath.Join(t.TempDir(), "applied.yaml")
	if err := os.WriteFile(applied, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: applied}\nstringData: {token: applied-plaintext-value}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.MustRun(t, k, "", "apply", "-f", applied)
	s.MustRun(t, k, "", "delete", "secret", "vault")
	_, js := s.BusConnect(t, "e2e", "system:masters")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secrets := 0
	harness.Eventually(t, 15*time.Second, func() error {
		secrets = 0
		for _, name := range bus.StreamNames {
			st, err := js.Stream(ctx, name)
			if err != nil {
				return err
			}
			info, err := st.Info(ctx)
			if err != nil {
				return err
			}
			for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
				msg, err := st.GetMsg(ctx, seq)
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				for _, secret := range []string{"hunter2", "aHVudGVyMi1wbGFpbnRleHQ", "applied-plaintext-value", "YXBwbGllZC1wbGFpbnRleHQtdmFsdWU"} {
					if bytes.Contains(msg.Data, []byte(secret)) {
						t.Fatalf("%s message %d (%s) holds Secret data: %s", name, seq, msg.Subject, msg.Data)
					}
				}
				if strings.Contains(msg.Subject, ".secrets.") {
					secrets++
				}
			}
		}
		// vault's create and delete and applied's create, on two streams.
		if secrets < 5 {
			return fmt.Errorf("%d Secret messages on the bus, want at least 5", secrets)
		}
		return nil
	})

	// etcd takes only its own CA's client certificates: none, or the
	// admin's of the cluster CA, is refused.
	admin, err := tls.LoadX509KeyPair(filepath.Join(s.Dir, "pki", "admin.crt"), filepath.Join(s.Dir, "pki", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "the admin's certificate": {admin}} {
		cfg := s.EtcdTLS(t)
		cfg.Certificates = certs
		cli, err := clientv3.New(clientv3.Config{Endpoints: cli.Endpoints(), TLS: cfg, DialTimeout: 3 * time.Second})
		if err != nil {
			continue // refused while dialling
		}
		gctx, gcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = cli.Get(gctx, "/registry/core/secrets/default/applied")
		gcancel()
		cli.Close()
		if err == nil {
			t.Errorf("etcd served a client with %s", name)
		}
	}
}

// TestIntegrationAuthPodToken: on the real local node, a pod's projected
// ServiceAccount token reaches the API server through the kubernetes
// Service (the proxy's DNAT to the API server's address in the node's
// network namespace), the server's certificate verifying against the
// projected ca.crt for the Service's address, and may list pods in its
// namespace only once a RoleBinding allows it.
func TestIntegrationAuthPodToken(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, cs, "apps")
	// The client is client-go's in-cluster configuration (the token and CA
	// of the projected volume, KUBERNETES_SERVICE_HOST and _PORT), built
	// here and handed to the busybox pod through a hostPath volume.
	bin := filepath.Join(t.TempDir(), "incluster")
	build := exec.Command("go", "build", "-o", bin, "./testdata/incluster")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the in-cluster client: %v\n%s", err, out)
	}
	hostDir := corev1.HostPathDirectory
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "bin", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Dir(bin), Type: &hostDir}}}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"/client/incluster"}, VolumeMounts: []corev1.VolumeMount{{Name: "bin", MountPath: "/client", ReadOnly: true}}}}}}
	created, err := cs.CoreV1().Pods("apps").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, v := range created.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			mounted = true
		}
	}
	if !mounted || created.Spec.ServiceAccountName != "default" {
		t.Fatalf("the ServiceAccount plugin did not mount a token: %+v", created.Spec)
	}
	logs := func() string {
		b, _ := cs.CoreV1().Pods("apps").GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
		return string(b)
	}
	harness.Eventually(t, 90*time.Second, func() error {
		if l := logs(); !strings.Contains(l, `pods is forbidden: User "system:serviceaccount:apps:default" cannot list resource "pods" in API group "" in the namespace "apps"`) {
			return fmt.Errorf("no 403 from the API server yet:\n%s", l)
		}
		return nil
	})
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "apps"}}}
	if _, err := cs.RbacV1().RoleBindings("apps").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		if l := logs(); !strings.Contains(l, "STATUS 200 client") {
			return fmt.Errorf("the pod has not listed its namespace's pods yet:\n%s", l)
		}
		return nil
	})
}

// runKubebus runs the kubebus binary and returns what it printed.
func runKubebus(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, harness.Binary(t), args...).CombinedOutput()
	return string(out), err
}

// TestIntegrationAPIServerWithoutCAKey: in a split deployment the API
// server holds no CA key: `kubebus certs` makes its certificates and the
// ServiceAccount key beforehand, and it serves with a copy of the PKI
// directory that lacks ca.key, creating none.
func TestIntegrationAPIServerWithoutCAKey(t *testing.T) {
	harness.SkipShort(t)
	full := t.TempDir()
	if out, err := runKubebus(t, "certs", "--pki-dir", full); err != nil {
		t.Fatalf("kubebus certs: %v\n%s", err, out)
	}
	keyless := t.TempDir()
	entries, err := os.ReadDir(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "ca.key" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(full, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(keyless, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etcd := harness.StartEtcd(t)
	nats := harness.StartNATS(t, full)
	a := harness.StartAPIServer(t, etcd.Endpoint, nats.URL(), keyless)
	out, err := exec.Command(harness.Kubectl(t), "--kubeconfig", a.Kubeconfig(), "get", "namespace", "kube-system", "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "namespace/kube-system" {
		t.Fatalf("kubectl against the API server without the CA key: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(keyless, "ca.key")); !os.IsNotExist(err) {
		t.Errorf("the API server made a CA key: %v", err)
	}
}

// TestIntegrationAuthTokenRequest: the TokenRequest API caps lifetimes at
// --service-account-max-token-expiration with upstream's warning, and
// still issues tokens bound to a pod that is being deleted (its kubelet
// renews them while the pod terminates), as upstream does.
func TestIntegrationAuthTokenRequest(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", append(slices.Clone(apiOnly), "--service-account-max-token-expiration=24h")...)
	warnings := &warningRecorder{}
	cfg := s.RESTConfig(t)
	cfg.WarningHandler = warnings
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lifetime := func(tr *authnv1.TokenRequest) int64 {
		t.Helper()
		parts := strings.Split(tr.Status.Token, ".")
		if len(parts) != 3 {
			t.Fatalf("the token is no JWT: %q", tr.Status.Token)
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		var claims struct{ Exp, Iat int64 }
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		return claims.Exp - claims.Iat
	}

	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](48 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *tr.Spec.ExpirationSeconds; got != 24*3600 || lifetime(tr) != 24*3600 {
		t.Errorf("48h asked under a 24h maximum: spec %d s, token %d s; want 86400", got, lifetime(tr))
	}
	if want := []string{"requested expiration of 172800 seconds shortened to 86400 seconds"}; !slices.Equal(warnings.all(), want) {
		t.Errorf("warnings %q, want %q", warnings.all(), want)
	}

	// Bad requests get upstream's answers.
	_, err = cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.name: Invalid value: "other": must match the service account name if specified`) {
		t.Errorf("a token request naming another account: %v, want 422", err)
	}
	// Validation comes before the bound object is looked up, as upstream:
	// an invalid lifetime bound to a pod that does not exist is a 422.
	short := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60),
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "absent"}}}
	_, err = cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", short, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes") {
		t.Errorf("a 60 s token bound to a missing pod: %v, want 422 for the lifetime", err)
	}
	cm := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}}
	_, err = cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", cm, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cannot bind token to object of type /v1, Kind=ConfigMap") {
		t.Errorf("a token bound to a ConfigMap: %v, want 400", err)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "leaving", Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{ServiceAccountName: "robot", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "leaving", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "leaving", UID: created.UID}}}
	tr, err = cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", bound, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token bound to a pod being deleted: %v", err)
	}
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:default:robot" {
		t.Errorf("the token of a terminating pod, reviewed: %+v", review.Status)
	}
}
