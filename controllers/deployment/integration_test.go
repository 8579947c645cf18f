package deployment_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/deployment"
	"github.com/kubebus/kubebus/controllers/replicaset"
	"github.com/kubebus/kubebus/test/harness"
)

// noServerKCM keeps `kubebus server` from running its own controller-manager:
// the test runs the controllers under test itself.
var noServerKCM = []string{"--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts}

// startControllers runs the ReplicaSet and Deployment controllers on
// bus-fed caches under a Manager, as the controller-manager would, until the
// test ends.
func startControllers(t *testing.T, s *harness.Server) kubernetes.Interface {
	t.Helper()
	cs := s.Clientset(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, js := s.BusConnect(t, "system:kube-controller-manager")
	inf, err := cache.New(cache.Config{JetStream: js, Component: "test-kcm", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rsRec, stopRS := controllers.Recorder(ctx, cs, "replicaset-controller")
	depRec, stopDep := controllers.Recorder(ctx, cs, "deployment-controller")
	rsc, err := replicaset.New(replicaset.Config{Client: cs, Pods: inf.Pods, ReplicaSets: inf.ReplicaSets, Recorder: rsRec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := deployment.New(deployment.Config{Client: cs, Deployments: inf.Deployments, ReplicaSets: inf.ReplicaSets, Pods: inf.Pods, Recorder: depRec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: logger}
	m.AddCache(inf)
	m.Add(rsc)
	m.Add(dc)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRS()
		stopDep()
		nc.Close()
	})
	return cs
}

// fakeKubelet marks every pod of the namespace Running and Ready as soon as
// it appears (there are no kubelets yet), until the test ends.
func fakeKubelet(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) || p.DeletionTimestamp != nil || isReady(p) {
					continue
				}
				p = p.DeepCopy()
				p.Status.Phase = corev1.PodRunning
				now := metav1.Now()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
				// A conflict means a newer version is on its way to this watch.
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
			w.Stop()
		}
	}()
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podWatch follows a namespace's pods from a watch and keeps the extremes
// of the pod count and of the ready count, event by event.
type podWatch struct {
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	maxPods  int
	minReady int
	// maxHashes is the most pod-template-hash values seen at once.
	maxHashes int
	armed     bool
	cancel    context.CancelFunc
	done      chan struct{}
}

func watchPods(t *testing.T, cs kubernetes.Interface, ns, selector string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	pw := &podWatch{pods: map[string]*corev1.Pod{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pw.done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.mu.Lock()
			if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
				delete(pw.pods, p.Name)
			} else {
				pw.pods[p.Name] = p
			}
			pw.record()
			pw.mu.Unlock()
		}
	}()
	t.Cleanup(pw.stop)
	return pw
}

func (pw *podWatch) record() {
	if !pw.armed {
		return
	}
	ready, hashes := 0, map[string]bool{}
	for _, p := range pw.pods {
		if isReady(p) {
			ready++
		}
		hashes[p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]] = true
	}
	pw.maxPods = max(pw.maxPods, len(pw.pods))
	pw.minReady = min(pw.minReady, ready)
	pw.maxHashes = max(pw.maxHashes, len(hashes))
}

// arm starts keeping the extremes from the current state.
func (pw *podWatch) arm() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.armed, pw.maxPods, pw.minReady, pw.maxHashes = true, 0, 1<<30, 0
	pw.record()
}

func (pw *podWatch) extremes() (maxPods, minReady, maxHashes int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.maxPods, pw.minReady, pw.maxHashes
}

func (pw *podWatch) stop() {
	pw.cancel()
	<-pw.done
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
spec:
  replicas: 3
  revisionHistoryLimit: 2
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 2, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.example/app:v1
`

func replicaSetsOf(t *testing.T, cs kubernetes.Interface, d *appsv1.Deployment) []appsv1.ReplicaSet {
	t.Helper()
	list, err := cs.AppsV1().ReplicaSets(d.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			out = append(out, rs)
		}
	}
	return out
}

func podsOwnedBy(t *testing.T, cs kubernetes.Interface, rs *appsv1.ReplicaSet) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(rs.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func getDeployment(t *testing.T, cs kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rsWithImage returns the deployment's ReplicaSet running image, or nil.
func rsWithImage(rss []appsv1.ReplicaSet, image string) *appsv1.ReplicaSet {
	for i := range rss {
		if rss[i].Spec.Template.Spec.Containers[0].Image == image {
			return &rss[i]
		}
	}
	return nil
}

// waitRolledOut waits for `kubectl rollout status` and then checks that the
// deployment's ReplicaSet for image has all the pods and the others none.
func waitRolledOut(t *testing.T, s *harness.Server, cs kubernetes.Interface, ns, image string, replicas int) {
	t.Helper()
	out := s.MustRun(t, harness.Kubectl(t), "", "-n", ns, "rollout", "status", "deployment/web", "--timeout=120s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %s", out)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		d := getDeployment(t, cs, ns, "web")
		rss := replicaSetsOf(t, cs, d)
		cur := rsWithImage(rss, image)
		if cur == nil {
			return fmt.Errorf("no replicaset runs %s", image)
		}
		if n := len(podsOwnedBy(t, cs, cur)); n != replicas {
			return fmt.Errorf("replicaset %s has %d pods, want %d", cur.Name, n, replicas)
		}
		for i := range rss {
			if rss[i].UID != cur.UID && len(podsOwnedBy(t, cs, &rss[i])) != 0 {
				return fmt.Errorf("old replicaset %s still has pods", rss[i].Name)
			}
		}
		return nil
	})
}

// TestIntegrationDeployment walks through the acceptance of issue 4 with the
// stock kubectl: apply, scale, set image (rolling within maxSurge and
// maxUnavailable, checked on every pod event), rollout undo and history,
// revisionHistoryLimit, pause and resume.
func TestIntegrationDeployment(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", noServerKCM...)
	cs := startControllers(t, s)
	kubectl := harness.Kubectl(t)
	const ns = "roll"
	s.MustRun(t, kubectl, "", "create", "namespace", ns)
	fakeKubelet(t, cs, ns)

	// apply: one ReplicaSet, three pods it owns.
	s.MustRun(t, kubectl, fmt.Sprintf(deploymentYAML, ns), "apply", "-f", "-")
	waitRolledOut(t, s, cs, ns, "registry.example/app:v1", 3)
	d := getDeployment(t, cs, ns, "web")
	rss := replicaSetsOf(t, cs, d)
	if len(rss) != 1 {
		t.Fatalf("%d replicasets, want 1", len(rss))
	}
	rs1 := rss[0]
	hash := rs1.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if hash == "" || rs1.Name != "web-"+hash || rs1.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
		t.Errorf("replicaset %s: labels %v selector %v", rs1.Name, rs1.Labels, rs1.Spec.Selector)
	}
	for _, p := range podsOwnedBy(t, cs, &rs1) {
		ref := metav1.GetControllerOf(&p)
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || !strings.HasPrefix(p.Name, rs1.Name+"-") || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s: labels %v owner %+v", p.Name, p.Labels, ref)
		}
	}
	if d.Annotations[deployment.RevisionAnnotation] != "1" || rs1.Annotations[deployment.RevisionAnnotation] != "1" {
		t.Errorf("revisions: deployment %q replicaset %q", d.Annotations[deployment.RevisionAnnotation], rs1.Annotations[deployment.RevisionAnnotation])
	}

	// scale to 10.
	s.MustRun(t, kubectl, "", "-n", ns, "scale", "deployment/web", "--replicas=10")
	waitRolledOut(t, s, cs, ns, "registry.example/app:v1", 10)
	if n := len(replicaSetsOf(t, cs, getDeployment(t, cs, ns, "web"))); n != 1 {
		t.Fatalf("scaling made %d replicasets", n)
	}

	// set image: a new ReplicaSet, never more than 10+2 pods nor fewer
	// than 10-1 ready.
	pw := watchPods(t, cs, ns, "app=web")
	harness.Eventually(t, 10*time.Second, func() error {
		pw.mu.Lock()
		defer pw.mu.Unlock()
		if len(pw.pods) != 10 {
			return fmt.Errorf("the watch sees %d pods", len(pw.pods))
		}
		return nil
	})
	pw.arm()
	checkBounds := func(step string) {
		t.Helper()
		maxPods, minReady, _ := pw.extremes()
		t.Logf("%s: at most %d pods, at least %d ready", step, maxPods, minReady)
		if maxPods > 12 || minReady < 9 {
			t.Errorf("%s: pods reached %d (limit 12), ready fell to %d (floor 9)", step, maxPods, minReady)
		}
	}
	s.MustRun(t, kubectl, "", "-n", ns, "set", "image", "deployment/web", "app=registry.example/app:v2")
	waitRolledOut(t, s, cs, ns, "registry.example/app:v2", 10)
	checkBounds("set image v2")
	d = getDeployment(t, cs, ns, "web")
	rss = replicaSetsOf(t, cs, d)
	if len(rss) != 2 || d.Annotations[deployment.RevisionAnnotation] != "2" {
		t.Fatalf("%d replicasets, deployment revision %q; want 2 and 2", len(rss), d.Annotations[deployment.RevisionAnnotation])
	}
	if rs := rsWithImage(rss, "registry.example/app:v1"); rs == nil || *rs.Spec.Replicas != 0 {
		t.Errorf("old replicaset not scaled to 0: %+v", rs)
	}
	checkConditions(t, d)

	// rollout undo: back to v1, which becomes revision 3.
	pw.arm()
	s.MustRun(t, kubectl, "", "-n", ns, "rollout", "undo", "deployment/web")
	waitRolledOut(t, s, cs, ns, "registry.example/app:v1", 10)
	checkBounds("rollout undo")
	d = getDeployment(t, cs, ns, "web")
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/app:v1" {
		t.Errorf("undo left the template at %s", img)
	}
	rss = replicaSetsOf(t, cs, d)
	back := rsWithImage(rss, "registry.example/app:v1")
	if len(rss) != 2 || back.UID != rs1.UID || back.Annotations[deployment.RevisionAnnotation] != "3" ||
		back.Annotations[deployment.RevisionHistoryAnnotation] != "1" || d.Annotations[deployment.RevisionAnnotation] != "3" {
		t.Errorf("after undo: %d replicasets, v1 replicaset %s annotations %v, deployment revision %q",
			len(rss), back.Name, back.Annotations, d.Annotations[deployment.RevisionAnnotation])
	}
	hist := s.MustRun(t, kubectl, "", "-n", ns, "rollout", "history", "deployment/web")
	if !regexpLine(hist, "2") || !regexpLine(hist, "3") || regexpLine(hist, "1") {
		t.Errorf("rollout history:\n%s", hist)
	}

	// revisionHistoryLimit=2: after two more rollouts only two old
	// ReplicaSets remain.
	for _, v := range []string{"v3", "v4"} {
		s.MustRun(t, kubectl, "", "-n", ns, "set", "image", "deployment/web", "app=registry.example/app:"+v)
		waitRolledOut(t, s, cs, ns, "registry.example/app:"+v, 10)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		rss := replicaSetsOf(t, cs, getDeployment(t, cs, ns, "web"))
		var imgs []string
		for _, rs := range rss {
			imgs = append(imgs, strings.TrimPrefix(rs.Spec.Template.Spec.Containers[0].Image, "registry.example/app:"))
		}
		slices.Sort(imgs)
		if !slices.Equal(imgs, []string{"v1", "v3", "v4"}) {
			return fmt.Errorf("replicasets run %v, want v1 v3 v4 (v2, the oldest revision, cleaned up)", imgs)
		}
		return nil
	})

	// pause: a template change rolls nothing out until resume.
	s.MustRun(t, kubectl, "", "-n", ns, "rollout", "pause", "deployment/web")
	s.MustRun(t, kubectl, "", "-n", ns, "set", "image", "deployment/web", "app=registry.example/app:v5")
	harness.Eventually(t, 30*time.Second, func() error {
		d := getDeployment(t, cs, ns, "web")
		c := condition(d, appsv1.DeploymentProgressing)
		if d.Status.ObservedGeneration < d.Generation || c == nil || c.Reason != deployment.ReasonPaused {
			return fmt.Errorf("observed generation %d of %d, progressing %+v", d.Status.ObservedGeneration, d.Generation, c)
		}
		return nil
	})
	if rs := rsWithImage(replicaSetsOf(t, cs, getDeployment(t, cs, ns, "web")), "registry.example/app:v5"); rs != nil {
		t.Fatalf("a paused deployment rolled out %s", rs.Name)
	}
	pw.arm()
	s.MustRun(t, kubectl, "", "-n", ns, "rollout", "resume", "deployment/web")
	waitRolledOut(t, s, cs, ns, "registry.example/app:v5", 10)
	checkBounds("resume")

	// Events for kubectl describe.
	events, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range events.Items {
		reasons[e.InvolvedObject.Kind+"/"+e.Reason]++
	}
	if reasons["Deployment/ScalingReplicaSet"] == 0 || reasons["ReplicaSet/SuccessfulCreate"] == 0 || reasons["ReplicaSet/SuccessfulDelete"] == 0 {
		t.Errorf("events by kind/reason: %v", reasons)
	}
	desc := s.MustRun(t, kubectl, "", "-n", ns, "describe", "deployment/web")
	if !strings.Contains(desc, "ScalingReplicaSet") || !strings.Contains(desc, "NewReplicaSetAvailable") {
		t.Errorf("kubectl describe:\n%s", desc)
	}
}

// regexpLine reports whether a `rollout history` table has a row for rev.
func regexpLine(out, rev string) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == rev {
			return true
		}
	}
	return false
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func checkConditions(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if c := condition(d, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Available condition %+v", c)
	}
	if c := condition(d, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionTrue || c.Reason != deployment.ReasonNewRSAvailable {
		t.Errorf("Progressing condition %+v", c)
	}
	st := d.Status
	if st.Replicas != 10 || st.UpdatedReplicas != 10 || st.ReadyReplicas != 10 || st.AvailableReplicas != 10 || st.UnavailableReplicas != 0 || st.ObservedGeneration != d.Generation {
		t.Errorf("status %+v", st)
	}
}

const recreateYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  strategy: {type: Recreate}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.example/app:v1
`

// TestIntegrationDeploymentRecreateAndDeadline: a Recreate never runs old
// and new pods together; a rollout whose pods never become ready is marked
// ProgressDeadlineExceeded and kubectl rollout status fails.
func TestIntegrationDeploymentRecreateAndDeadline(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", noServerKCM...)
	cs := startControllers(t, s)
	kubectl := harness.Kubectl(t)

	t.Run("recreate", func(t *testing.T) {
		const ns = "recreate"
		s.MustRun(t, kubectl, "", "create", "namespace", ns)
		fakeKubelet(t, cs, ns)
		s.MustRun(t, kubectl, fmt.Sprintf(recreateYAML, ns), "apply", "-f", "-")
		waitRolledOut(t, s, cs, ns, "registry.example/app:v1", 4)
		pw := watchPods(t, cs, ns, "app=web")
		harness.Eventually(t, 10*time.Second, func() error {
			pw.mu.Lock()
			defer pw.mu.Unlock()
			if len(pw.pods) != 4 {
				return fmt.Errorf("the watch sees %d pods", len(pw.pods))
			}
			return nil
		})
		pw.arm()
		s.MustRun(t, kubectl, "", "-n", ns, "set", "image", "deployment/web", "app=registry.example/app:v2")
		waitRolledOut(t, s, cs, ns, "registry.example/app:v2", 4)
		if maxPods, _, maxHashes := pw.extremes(); maxHashes > 1 || maxPods > 4 {
			t.Errorf("recreate ran %d templates and %d pods at once", maxHashes, maxPods)
		}
	})

	t.Run("progress deadline", func(t *testing.T) {
		const ns = "stuck" // no fake kubelet: pods never become ready
		s.MustRun(t, kubectl, "", "create", "namespace", ns)
		yaml := strings.Replace(fmt.Sprintf(deploymentYAML, ns), "  replicas: 3\n", "  replicas: 2\n  progressDeadlineSeconds: 2\n", 1)
		s.MustRun(t, kubectl, yaml, "apply", "-f", "-")
		harness.Eventually(t, 30*time.Second, func() error {
			d := getDeployment(t, cs, ns, "web")
			c := condition(d, appsv1.DeploymentProgressing)
			if c == nil || c.Reason != deployment.ReasonTimedOut || c.Status != corev1.ConditionFalse {
				return fmt.Errorf("progressing %+v", c)
			}
			if a := condition(d, appsv1.DeploymentAvailable); a == nil || a.Status != corev1.ConditionFalse {
				return fmt.Errorf("available %+v", a)
			}
			return nil
		})
		_, err := s.Run(t, kubectl, "", "-n", ns, "rollout", "status", "deployment/web", "--timeout=30s")
		if err == nil || !strings.Contains(err.Error(), "exceeded its progress deadline") {
			t.Errorf("rollout status of a stuck deployment: %v", err)
		}
	})
}
