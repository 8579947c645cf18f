package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// anonymousClient trusts the server's CA and presents no credential.
func anonymousClient(t testing.TB, s *harness.Server) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func statusOf(t testing.TB, c *http.Client, method, url string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestIntegrationAuthAnonymous: a request without a credential reaches
// only what the bootstrap policy grants system:unauthenticated (health and
// version); every resource path, the profiler and the metrics answer 401
// or 403; an unknown bearer token is a 401. With --anonymous-auth=false
// even health is a 401.
func TestIntegrationAuthAnonymous(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...) // the harness turns --profiling on
	c := anonymousClient(t, s)
	for _, p := range []string{"/livez", "/readyz", "/healthz", "/version"} {
		if code := statusOf(t, c, http.MethodGet, s.URL+p); code != http.StatusOK {
			t.Errorf("anonymous GET %s = %d, want 200", p, code)
		}
	}
	for _, p := range []string{
		"/api/v1/namespaces/kube-system/secrets", "/api/v1/secrets", "/api/v1/pods", "/api/v1/nodes",
		"/api/v1/namespaces/default/pods/x", "/apis/apps/v1/deployments", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
		"/api/v1/namespaces/default/configmaps", "/api/v1/nosuchresource", "/apis/no.such.group/v1/things",
		"/debug/pprof/", "/debug/pprof/heap", "/metrics", "/kubebus/v1/tap", "/openapi/v2",
	} {
		code := statusOf(t, c, http.MethodGet, s.URL+p)
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("anonymous GET %s = %d, want 401 or 403", p, code)
		}
	}
	if code := statusOf(t, c, http.MethodPost, s.URL+"/api/v1/namespaces"); code != http.StatusForbidden {
		t.Errorf("anonymous POST namespaces = %d, want 403", code)
	}
	// A bearer token nobody knows is a bad credential, not anonymous: 401
	// even where anonymous requests are let in (this server has no
	// --token-auth-file; upstream answers the same).
	for _, token := range []string{"garbage", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2Vsc2V3aGVyZSJ9.c2ln"} {
		for _, p := range []string{"/version", "/api/v1/pods"} {
			req, err := http.NewRequest(http.MethodGet, s.URL+p, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "bearer "+token)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with an unknown bearer token %.10s...: %d, want 401", p, token, resp.StatusCode)
			}
		}
	}
	// The admin reaches the profiler and the metrics.
	admin := s.HTTPClient(t)
	for _, p := range []string{"/debug/pprof/", "/metrics"} {
		if code := statusOf(t, admin, http.MethodGet, s.URL+p); code != http.StatusOK {
			t.Errorf("admin GET %s = %d, want 200", p, code)
		}
	}

	strict := harness.StartServer(t, "", append([]string{"--anonymous-auth=false", "--profiling=false"}, apiOnly...)...)
	sc := anonymousClient(t, strict)
	for _, p := range []string{"/livez", "/version", "/api/v1/pods"} {
		if code := statusOf(t, sc, http.MethodGet, strict.URL+p); code != http.StatusUnauthorized {
			t.Errorf("--anonymous-auth=false: anonymous GET %s = %d, want 401", p, code)
		}
	}
	// Without --profiling there is no profiler, even for the admin.
	if code := statusOf(t, strict.HTTPClient(t), http.MethodGet, strict.URL+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("admin GET /debug/pprof/ without --profiling = %d, want 404", code)
	}
}

// TestIntegrationAuthRBACKubectl walks the RBAC story with the stock
// kubectl and the pinned 1.32: roles and bindings created by the admin,
// can-i, whoami, impersonation, a user limited to viewing one namespace,
// and escalation refused.
func TestIntegrationAuthRBACKubectl(t *testing.T) {
	harness.SkipShort(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,1001\nbob-token,bob,1002,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The controller-manager aggregates the rules of admin, edit and view.
	s := harness.StartServer(t, "", "--token-auth-file", tokens, "--disable-scheduler")
	binaries := []struct {
		name, suffix string
		find         func(testing.TB) string
	}{
		{"dispatcher", "a", harness.Kubectl},
		{"kubectl.1.32", "b", func(t testing.TB) string { return harness.PinnedKubectl(t, "1.32") }},
	}
	for _, b := range binaries {
		t.Run(b.name, func(t *testing.T) {
			bin := b.find(t)
			if bin == "" {
				prereq.Missing(t, "kubectl.1.32 not found on PATH or beside the stock kubectl")
			}
			rbacStory(t, s, bin, "team-"+b.suffix, "other-"+b.suffix)
		})
	}
}

func rbacStory(t *testing.T, s *harness.Server, bin, team, other string) {
	admin := func(args ...string) string { t.Helper(); return s.MustRun(t, bin, "", args...) }
	as := func(token string, args ...string) (string, error) {
		t.Helper()
		return s.Run(t, bin, "", append([]string{"--kubeconfig", tokenKubeconfig(t, s, token)}, args...)...)
	}
	admin("create", "namespace", team)
	admin("create", "namespace", other)
	admin("run", "web", "-n", team, "--image=registry.k8s.io/pause:3.10")
	admin("run", "web", "-n", other, "--image=registry.k8s.io/pause:3.10")

	// Roles and bindings with kubectl create.
	wantContains(t, admin("create", "role", "pod-reader", "-n", team, "--verb=get,list,watch", "--resource=pods"), "role.rbac.authorization.k8s.io/pod-reader created")
	wantContains(t, admin("create", "clusterrole", "node-reader-"+team, "--verb=get,list", "--resource=nodes"), "clusterrole.rbac.authorization.k8s.io/node-reader-"+team+" created")
	wantContains(t, admin("create", "rolebinding", "alice-view", "-n", team, "--clusterrole=view", "--user=alice"), "rolebinding.rbac.authorization.k8s.io/alice-view created")
	wantContains(t, admin("create", "clusterrolebinding", "bob-nodes-"+team, "--clusterrole=node-reader-"+team, "--group=devs"), "clusterrolebinding.rbac.authorization.k8s.io/bob-nodes-"+team+" created")
	admin("create", "role", "binder", "-n", team, "--verb=create,get,list", "--resource=rolebindings")
	admin("create", "rolebinding", "alice-binder", "-n", team, "--role=binder", "--user=alice")

	// The authorizer reads RBAC from its bus-fed cache: the bindings are
	// in force within moments of their creation.
	harness.Eventually(t, 10*time.Second, func() error {
		out, err := as("alice-token", "auth", "can-i", "list", "pods", "-n", team)
		if err != nil || strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("alice can-i list pods -n %s: %q %v", team, out, err)
		}
		return nil
	})
	if out, _ := as("alice-token", "auth", "can-i", "delete", "pods", "-n", team); strings.TrimSpace(out) != "no" {
		t.Errorf("alice can-i delete pods = %q, want no", out)
	}
	if out, _ := as("alice-token", "auth", "can-i", "list", "pods", "-n", other); strings.TrimSpace(out) != "no" {
		t.Errorf("alice can-i list pods in %s = %q, want no", other, out)
	}
	// The admin asks about others with --as.
	if out := admin("auth", "can-i", "list", "pods", "-n", team, "--as=alice"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can-i --as=alice list pods = %q, want yes", out)
	}
	if out, _ := s.Run(t, bin, "", "auth", "can-i", "get", "nodes", "--as=bob", "--as-group=devs"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can-i --as=bob --as-group=devs get nodes = %q, want yes", out)
	}
	list := admin("auth", "can-i", "--list", "-n", team, "--as=alice")
	for _, want := range []string{"pods", "rolebindings.rbac.authorization.k8s.io"} {
		if !strings.Contains(list, want) {
			t.Errorf("can-i --list --as=alice lacks %s:\n%s", want, list)
		}
	}
	who, err := as("alice-token", "auth", "whoami")
	if err != nil || !strings.Contains(who, "alice") || !strings.Contains(who, "system:authenticated") {
		t.Errorf("alice whoami = %q %v", who, err)
	}
	wantContains(t, admin("auth", "whoami"), "system:masters")

	// A service account's rights, seen by impersonation.
	admin("create", "serviceaccount", "robot", "-n", team)
	if out, _ := s.Run(t, bin, "", "auth", "can-i", "list", "pods", "-n", team, "--as=system:serviceaccount:"+team+":robot"); strings.TrimSpace(out) != "no" {
		t.Errorf("robot can-i list pods before a binding = %q, want no", out)
	}
	admin("create", "rolebinding", "robot-reader", "-n", team, "--role=pod-reader", "--serviceaccount="+team+":robot")
	harness.Eventually(t, 10*time.Second, func() error {
		out, _ := s.Run(t, bin, "", "auth", "can-i", "list", "pods", "-n", team, "--as=system:serviceaccount:"+team+":robot")
		if strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("robot can-i list pods after the binding = %q", out)
		}
		return nil
	})

	// What alice may and may not do, with upstream's messages.
	if out, err := as("alice-token", "get", "pods", "-n", team); err != nil || !strings.Contains(out, "web") {
		t.Errorf("alice get pods -n %s: %q %v", team, out, err)
	}
	_, err = as("alice-token", "delete", "pod", "web", "-n", team)
	wantForbidden(t, err, `pods "web" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "`+team+`"`)
	_, err = as("alice-token", "get", "pods", "-n", other)
	wantForbidden(t, err, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "`+other+`"`)
	_, err = as("alice-token", "get", "secrets", "-n", team)
	wantForbidden(t, err, `User "alice" cannot list resource "secrets"`)
	// alice may create role bindings in her namespace, but not grant more
	// than she holds: binding admin is an escalation.
	_, err = as("alice-token", "create", "rolebinding", "bob-admin", "-n", team, "--clusterrole=admin", "--user=bob")
	wantForbidden(t, err, "is attempting to grant RBAC permissions not currently held")
	// Granting what she holds herself is fine.
	if _, err := as("alice-token", "create", "rolebinding", "bob-view", "-n", team, "--clusterrole=view", "--user=bob"); err != nil {
		t.Errorf("alice granting view (which she holds): %v", err)
	}
}

// tokenKubeconfig writes a kubeconfig for the server that authenticates
// with a bearer token only (no client certificate).
func tokenKubeconfig(t testing.TB, s *harness.Server, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.ClientCertificate, ai.ClientKey, ai.ClientCertificateData, ai.ClientKeyData = "", "", nil, nil
		ai.Token = token
	}
	name := token
	if len(name) > 40 { // a JWT is too long for a file name
		sum := sha256.Sum256([]byte(token))
		name = hex.EncodeToString(sum[:8])
	}
	p := filepath.Join(s.Dir, "kubeconfig-"+name)
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantContains(t testing.TB, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

func wantForbidden(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("want Forbidden (%s), got success", want)
		return
	}
	msg := err.Error()
	if !strings.Contains(strings.ToLower(msg), "forbidden") || !strings.Contains(msg, want) {
		t.Errorf("want Forbidden with %q, got:\n%s", want, msg)
	}
}

// TestIntegrationAuthSystemNamespaces: the bootstrap leaves every
// namespace with a default ServiceAccount and the kube-root-ca.crt
// ConfigMap, the kubernetes Service exists, and system namespaces cannot
// be deleted.
func TestIntegrationAuthSystemNamespaces(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-scheduler")
	cs := s.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 15*time.Second, func() error {
		for _, ns := range []string{"default", "kube-system", "fresh"} {
			if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return err
			}
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !strings.Contains(cm.Data["ca.crt"], "BEGIN CERTIFICATE") {
				return fmt.Errorf("kube-root-ca.crt in %s has no certificate", ns)
			}
		}
		svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if svc.Spec.ClusterIP != "10.96.0.1" || svc.Spec.Ports[0].Port != 443 {
			return fmt.Errorf("kubernetes service: %s %v", svc.Spec.ClusterIP, svc.Spec.Ports)
		}
		return nil
	})
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err == nil || !strings.Contains(err.Error(), "this namespace may not be deleted") {
			t.Errorf("deleting namespace %s: %v, want forbidden", ns, err)
		}
	}
	// A create in a missing namespace is a 404 naming it.
	_, err := cs.CoreV1().ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `namespaces "nowhere" not found`) {
		t.Errorf("create in a missing namespace: %v", err)
	}
}

// TestIntegrationAuthEscalateByName: a grant of the escalate verb limited
// to one role name lets a user write that role beyond their own rights
// where the URL names it (server-side apply), never by a POST to the
// collection, whose URL names no role, as upstream.
func TestIntegrationAuthEscalateByName(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	ctx := context.Background()
	admin := s.Clientset(t)
	grants := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "role-writer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"create", "get", "patch", "update"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"escalate"}, ResourceNames: []string{"secret-reader"}},
	}}
	if _, err := admin.RbacV1().Roles("default").Create(ctx, grants, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "role-writer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "role-writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "eve"}}}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := s.RESTConfig(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "eve"}
	eve := kubernetes.NewForConfigOrDie(cfg)
	readSecrets := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
	// The binding reaches the API server's RBAC cache through the bus.
	harness.Eventually(t, 15*time.Second, func() error {
		_, err := eve.RbacV1().Roles("default").Get(ctx, "role-writer", metav1.GetOptions{})
		return err
	})
	_, err := eve.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"}, Rules: readSecrets}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is attempting to grant RBAC permissions not currently held") {
		t.Errorf("POST of a role beyond eve's rights, escalate granted on its name only: %v, want 403", err)
	}
	applied := rbacv1ac.Role("secret-reader", "default").WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").WithVerbs("get"))
	if _, err := eve.RbacV1().Roles("default").Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "eve"}); err != nil {
		t.Errorf("server-side apply of the role escalate is granted on: %v", err)
	}
	other := rbacv1ac.Role("other-reader", "default").WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").WithVerbs("get"))
	if _, err := eve.RbacV1().Roles("default").Apply(ctx, other, metav1.ApplyOptions{FieldManager: "eve"}); !apierrors.IsForbidden(err) {
		t.Errorf("server-side apply of another role beyond eve's rights: %v, want 403", err)
	}
}
