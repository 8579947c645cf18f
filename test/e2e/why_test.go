package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/why"
	"github.com/kubebus/kubebus/cmd/kubebus/app"
	"github.com/kubebus/kubebus/test/harness"
)

// whyRun runs `kubebus why ARGS` against s in this process and returns its
// output.
func whyRun(t *testing.T, s *harness.Server, args ...string) (string, error) {
	t.Helper()
	return whyRunAs(t, s.Kubeconfig, args...)
}

// whyRunAs runs `kubebus why ARGS` with a kubeconfig.
func whyRunAs(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := app.Run(ctx, append([]string{"why", "--kubeconfig", kubeconfig}, args...), &out, &errb)
	if err != nil {
		return out.String(), fmt.Errorf("kubebus why %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// whyReport is `kubebus why ARGS -o json`, decoded.
func whyReport(t *testing.T, s *harness.Server, args ...string) (why.Report, error) {
	t.Helper()
	out, err := whyRun(t, s, append(args, "-o", "json")...)
	if err != nil {
		return why.Report{}, err
	}
	var r why.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return why.Report{}, fmt.Errorf("why -o json printed no report: %v\n%s", err, out)
	}
	return r, nil
}

// waitWhy waits until `kubebus why` names the cause, and every wanted text
// is in its text output; it returns the text.
func waitWhy(t *testing.T, s *harness.Server, cause string, want []string, args ...string) string {
	t.Helper()
	var text string
	harness.Eventually(t, 90*time.Second, func() error {
		r, err := whyReport(t, s, args...)
		if err != nil {
			return err
		}
		if out, err := whyRun(t, s, args...); err == nil {
			text = out
		} else {
			return err
		}
		found := false
		for _, f := range r.Stops {
			found = found || f.Cause == cause
		}
		if !found {
			return fmt.Errorf("no %s finding yet:\n%s", cause, text)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				return fmt.Errorf("the diagnosis lacks %q:\n%s", w, text)
			}
		}
		return nil
	})
	t.Logf("kubebus why %s:\n%s", strings.Join(args, " "), text)
	return text
}

func mkNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func whyPod(name string, mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptrTo(int64(1)),
		Containers: []corev1.Container{{Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", "sleep 3600"}}}}}
	if mut != nil {
		mut(p)
	}
	return p
}

func ptrTo[T any](v T) *T { return &v }

func whyDeployment(name string, replicas int32, mut func(*appsv1.Deployment)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptrTo(int64(1)),
			Containers: []corev1.Container{{Name: "web", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"httpd", "-f", "-p", "8080"}, Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1}}}}}}}
	if mut != nil {
		mut(d)
	}
	return d
}

// stageCounts reads the observation counts of the API server's
// kubebus_pod_stage_duration_seconds histogram, by stage.
func stageCounts(t *testing.T, s *harness.Server) map[string]float64 {
	t.Helper()
	resp, err := s.HTTPClient(t).Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, `kubebus_pod_stage_duration_seconds_count{stage="`)
		if !ok {
			continue
		}
		stage, value, _ := strings.Cut(rest, `"} `)
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("bad metric line %q", line)
		}
		counts[stage] = v
	}
	return counts
}

// TestIntegrationWhy: `kubebus why` (and `kubectl why`, the plugin) names
// the right cause for each way a workload gets stuck, from the bus's
// history, also after the Events are deleted; for a healthy Deployment the
// chain lists every step and its durations add up to the time from create
// to Ready.
func TestIntegrationWhy(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	const ns = "why"
	mkNamespace(t, cs, ns)
	pods := cs.CoreV1().Pods(ns)

	t.Run("healthy deployment: every step, durations add up", func(t *testing.T) {
		created := time.Now()
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, whyDeployment("web", 2, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var readyAt time.Time
		harness.Eventually(t, 90*time.Second, func() error {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != 2 {
				return fmt.Errorf("%d/2 ready", d.Status.ReadyReplicas)
			}
			readyAt = time.Now()
			return nil
		})
		var r why.Report
		harness.Eventually(t, 30*time.Second, func() error {
			var err error
			if r, err = whyReport(t, s, "deployment/web", "-n", ns); err != nil {
				return err
			}
			if len(r.Stops) != 0 {
				return fmt.Errorf("a healthy Deployment has findings: %+v", r.Stops)
			}
			var stages []string
			for _, l := range r.Chain {
				stages = append(stages, l.Stage)
			}
			if got := strings.Join(stages, ","); got != "owner,owner,created,scheduled,sandbox,started,ready,endpoints,programmed" {
				return fmt.Errorf("chain stages %s", got)
			}
			return nil
		})
		var sum time.Duration
		ready := -1
		for i, l := range r.Chain {
			if l.Who == "" || l.Who == "-" || l.Revision <= 0 {
				t.Errorf("step %q has no writer or revision: %+v", l.Step, l)
			}
			if i > 0 && l.Took < 0 {
				t.Errorf("step %q took %v", l.Step, l.Took)
			}
			if ready < 0 {
				sum += l.Took
			}
			if l.Stage == "ready" {
				ready = i
			}
		}
		wall := r.Chain[ready].Time.Sub(r.Chain[0].Time)
		if sum != wall {
			t.Errorf("durations to Ready add up to %v, the chain's create-to-ready is %v", sum, wall)
		}
		// The chain's ends are the real ones: the Deployment's creation and
		// its last pod's readiness, as this test saw them.
		if d := r.Chain[0].Time.Sub(created); d < -time.Second || d > 2*time.Second {
			t.Errorf("the chain starts at %v, the test created the Deployment at %v", r.Chain[0].Time, created)
		}
		if d := readyAt.Sub(r.Chain[ready].Time); d < -time.Second || d > 3*time.Second {
			t.Errorf("the chain's Ready is at %v, the test saw the Deployment ready at %v", r.Chain[ready].Time, readyAt)
		}
		if r.Chain[1].Who != "kube-controller-manager" || r.Chain[len(r.Chain)-1].Who != "kube-proxy" {
			t.Errorf("the ReplicaSet was written by %q, the proxy's record by %q", r.Chain[1].Who, r.Chain[len(r.Chain)-1].Who)
		}
		if r.Slowest < 1 {
			t.Errorf("no slowest step marked: %d", r.Slowest)
		}
		out, err := whyRun(t, s, "deploy/web", "-n", ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"bound to node " + node.Name, "programmed by the proxy on node " + node.Name, "* slowest step:", "nothing is holding it up"} {
			if !strings.Contains(out, w) {
				t.Errorf("the text lacks %q:\n%s", w, out)
			}
		}
		t.Logf("kubebus why deploy/web:\n%s", out)

		// The API server observed the same steps in its stage histograms:
		// both pods went from created to ready, and at least one proxy
		// programmed their endpoints.
		harness.Eventually(t, 30*time.Second, func() error {
			counts := stageCounts(t, s)
			for _, st := range []string{"created_scheduled", "scheduled_sandbox", "sandbox_started", "started_ready", "ready_endpoints", "endpoints_programmed"} {
				if counts[st] < 2 {
					return fmt.Errorf("stage %s observed %v times: %v", st, counts[st], counts)
				}
			}
			return nil
		})
	})

	t.Run("pod too big for any node", func(t *testing.T) {
		p := whyPod("huge", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500")}
		})
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitWhy(t, s, "Unschedulable", []string{"Insufficient cpu", "closest node: " + node.Name, "short of"}, "pod/huge", "-n", ns)
	})

	t.Run("image that is not there", func(t *testing.T) {
		// PullNever: the node must not try a registry (none is reachable).
		p := whyPod("noimage", func(p *corev1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = "example.invalid/missing:1", corev1.PullNever
		})
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitWhy(t, s, "ImagePull", []string{`image "example.invalid/missing:1" cannot be pulled`, "ErrImageNeverPull"}, "pod/noimage", "-n", ns)
	})

	t.Run("container that exits 1", func(t *testing.T) {
		p := whyPod("crash", func(p *corev1.Pod) {
			p.Spec.Containers[0].Command = []string{"sh", "-c", "echo about to fail: missing config; exit 1"}
		})
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitWhy(t, s, "CrashLoopBackOff", []string{"exits with code 1", "about to fail: missing config"}, "pod/crash", "-n", ns)
	})

	t.Run("readiness probe that fails, also after its Events are deleted", func(t *testing.T) {
		p := whyPod("unready", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
				ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo db not reachable; exit 1"}}}}
		})
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := []string{"readiness probe fails", "exec sh -c echo db not reachable; exit 1", "last probe result: Unhealthy"}
		waitWhy(t, s, "ReadinessFailing", want, "pod/unready", "-n", ns)
		if err := cs.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=unready"})
			if err != nil || len(evs.Items) > 0 {
				return fmt.Errorf("events left: %v", err)
			}
			return nil
		})
		waitWhy(t, s, "ReadinessFailing", want, "pod/unready", "-n", ns)
	})

	t.Run("pods refused by a quota", func(t *testing.T) {
		const qns = "why-quota"
		mkNamespace(t, cs, qns)
		if _, err := cs.CoreV1().ResourceQuotas(qns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "two-pods"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			q, err := cs.CoreV1().ResourceQuotas(qns).Get(ctx, "two-pods", metav1.GetOptions{})
			if err != nil || len(q.Status.Hard) == 0 {
				return fmt.Errorf("quota status not computed yet: %v", err)
			}
			return nil
		})
		if _, err := cs.AppsV1().Deployments(qns).Create(ctx, whyDeployment("big", 4, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitWhy(t, s, "QuotaExceeded", []string{"exceeded quota: two-pods", "resourcequota two-pods: used/hard pods 2/2"}, "deployment/big", "-n", qns)
	})

	t.Run("namespace stuck on a finalizer", func(t *testing.T) {
		const sns = "why-stuck"
		mkNamespace(t, cs, sns)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
		if _, err := cs.CoreV1().ConfigMaps(sns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "backup-operator"}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, sns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { // let the namespace go
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			if _, err := cs.CoreV1().ConfigMaps(sns).Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Errorf("removing the finalizer: %v", err)
			}
		}()
		waitWhy(t, s, "StuckTerminating", []string{"configmaps/held waits for finalizer(s) example.com/hold",
			"added at revision", "by backup-operator"}, "ns/"+sns)
	})

	t.Run("deployment whose new ReplicaSet never becomes ready", func(t *testing.T) {
		d := whyDeployment("stalled", 2, func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = ptrTo(int32(5))
			d.Spec.Template.Spec.Containers[0].Image = "example.invalid/web:2"
			d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		})
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		text := waitWhy(t, s, "RolloutStalled", []string{"the rollout stalled: ReplicaSet stalled-", "progressDeadlineSeconds",
			`image "example.invalid/web:2" cannot be pulled`}, "deployment/stalled", "-n", ns)
		if !strings.Contains(text, "ImagePull pod/stalled-") {
			t.Errorf("the stalled rollout's cause is not traced to its pods:\n%s", text)
		}
	})

	t.Run("service whose selector matches nothing, through kubectl why", func(t *testing.T) {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "typo"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "wbe"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The stock kubectl finds kubectl-why on PATH: the kubebus binary
		// under the plugin's name.
		plugins := t.TempDir()
		if err := os.Symlink(harness.Binary(t), filepath.Join(plugins, "kubectl-why")); err != nil {
			t.Fatal(err)
		}
		kubectl := harness.Kubectl(t)
		harness.Eventually(t, 30*time.Second, func() error {
			cmd := exec.Command(kubectl, "why", "svc/typo", "-n", ns)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "HOME="+s.Dir, "PATH="+plugins+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("kubectl why: %v: %s", err, out)
			}
			for _, w := range []string{"SelectorMatchesNothing service/typo", "the selector app=wbe matches no pod in namespace why", "2 pod(s) have app=web"} {
				if !strings.Contains(string(out), w) {
					return fmt.Errorf("kubectl why lacks %q:\n%s", w, out)
				}
			}
			t.Logf("kubectl why svc/typo:\n%s", out)
			return nil
		})
	})

	t.Run("a namespace viewer's rights are enough", func(t *testing.T) {
		// A ServiceAccount with the view role in the namespace only: no
		// nodes, no proxy Leases, no other namespace.
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "viewer", Namespace: ns}}}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "viewer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kc := tokenKubeconfig(t, s, tok.Status.Token)
		harness.Eventually(t, 30*time.Second, func() error {
			out, err := whyRunAs(t, kc, "pod/crash", "-n", ns, "-o", "json")
			if err != nil {
				return err
			}
			var r why.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				return err
			}
			if len(r.Stops) == 0 || r.Stops[0].Cause != "CrashLoopBackOff" || !strings.Contains(strings.Join(r.Stops[0].Evidence, "\n"), "about to fail") {
				return fmt.Errorf("the viewer's diagnosis: %+v", r.Stops)
			}
			notes := strings.Join(r.Notes, "\n")
			if !strings.Contains(notes, "not read: nodes") || !strings.Contains(notes, "not read: leases.coordination.k8s.io in kube-node-lease") {
				return fmt.Errorf("what the viewer could not read is not named: %q", notes)
			}
			return nil
		})
		// Another namespace is refused outright.
		if _, err := whyRunAs(t, kc, "pod/crash", "-n", "default"); err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("a viewer of %s explained a pod of default: %v", ns, err)
		}
	})

	t.Run("as it was: --at a revision before the pod was bound", func(t *testing.T) {
		r, err := whyReport(t, s, "deployment/web", "-n", ns)
		if err != nil {
			t.Fatal(err)
		}
		var bound int64
		for _, l := range r.Chain {
			if l.Stage == "scheduled" {
				bound = l.Revision
			}
		}
		then, err := whyReport(t, s, "deployment/web", "-n", ns, "--at", fmt.Sprint(bound-1))
		if err != nil {
			t.Fatal(err)
		}
		if then.Revision >= bound || len(then.Stops) == 0 {
			t.Errorf("--at %d: revision %d, findings %+v", bound-1, then.Revision, then.Stops)
		}
		for _, l := range then.Chain {
			if l.Revision >= bound {
				t.Errorf("--at %d shows a later step: %+v", bound-1, l)
			}
		}
	})
}
