package e2e

import (
	"context"
	"fmt"
	"regexp"
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

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// plainSet is a volume-less StatefulSet: its pods are ready once started,
// and say which template version they run.
const plainSet = `apiVersion: v1
kind: Service
metadata:
  name: plain
spec:
  clusterIP: None
  selector: {app: plain}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: plain
spec:
  serviceName: plain
  replicas: 3
  selector:
    matchLabels: {app: plain}
  template:
    metadata:
      labels: {app: plain}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        env: [{name: VERSION, value: "1"}]
        command: ["sh", "-c", "exec sleep 3600"]
        readinessProbe:
          exec: {command: ["true"]}
          periodSeconds: 1
`

// webSet is the StatefulSet of the acceptance: three pods behind a
// headless Service, each with a claim of its own; the first start of an
// ordinal writes its hostname and a random token into its volume, and a
// pod is ready once the file is there.
const webSet = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "[ -f /data/id ] || echo \"$(hostname) $(cat /proc/sys/kernel/random/uuid)\" > /data/id; exec sleep 3600"]
        volumeMounts: [{name: data, mountPath: /data}]
        readinessProbe:
          exec: {command: ["test", "-f", "/data/id"]}
          periodSeconds: 1
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: local-path
      resources:
        requests: {storage: 16Mi}
`

// TestIntegrationStatefulSet runs StatefulSets on the all-in-one's real
// node: pods come up one ordinal at a time, each after the one before is
// ready; a rolling update replaces them from the highest ordinal down;
// kubectl rollout status, history and undo (1.32 and 1.33) work on them;
// scale-down removes the highest ordinal first; and a pod's volume
// outlives the pod.
func TestIntegrationStatefulSet(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	kubectl := harness.Kubectl(t)
	// Before the pods are cleaned up (cleanups run last first): the sets
	// would make new ones.
	t.Cleanup(func() {
		_ = cs.AppsV1().StatefulSets("default").DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	kubectls := map[string]string{}
	for _, minor := range []string{"1.32", "1.33"} {
		bin := harness.PinnedKubectl(t, minor)
		if bin == "" {
			prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
		}
		kubectls[minor] = bin
	}

	t.Run("ordered", func(t *testing.T) {
		w := watchPods(t, cs, "app=plain")
		s.MustRun(t, kubectl, plainSet, "apply", "-f", "-")
		for _, minor := range []string{"1.32", "1.33"} {
			out := s.MustRun(t, kubectls[minor], "", "rollout", "status", "sts/plain", "--timeout=3m")
			if !strings.Contains(out, "partitioned roll out complete: 3 new pods have been updated") {
				t.Fatalf("kubectl %s rollout status: %q", minor, out)
			}
		}
		w.expectOrdered(t, "plain", 3)
		if got := w.created(); !slices.Equal(got, []string{"plain-0", "plain-1", "plain-2"}) {
			t.Fatalf("creation order = %v", got)
		}
		checkPods(t, cs, "plain", 3)
		checkEvents(t, cs, "plain", "SuccessfulCreate", "create Pod plain-2 in StatefulSet plain successful")
		out := s.MustRun(t, kubectl, "", "get", "sts", "plain")
		if !stsMatch(`(?m)^plain\s+3/3\s+\S+$`, out) {
			t.Fatalf("kubectl get sts:\n%s", out)
		}
		out = s.MustRun(t, kubectl, "", "get", "sts", "plain", "-o", "wide")
		if !stsMatch(`(?m)^NAME\s+READY\s+AGE\s+CONTAINERS\s+IMAGES$`, out) || !stsMatch(`(?m)^plain\s+3/3\s+\S+\s+main\s+busybox:latest$`, out) {
			t.Fatalf("kubectl get sts -o wide:\n%s", out)
		}
		out = s.MustRun(t, kubectl, "", "describe", "sts", "plain")
		for _, want := range []string{"Pods Status:", "3 Running / 0 Waiting / 0 Succeeded / 0 Failed", "Update Strategy:", "SuccessfulCreate"} {
			if !strings.Contains(out, want) {
				t.Fatalf("kubectl describe sts lacks %q:\n%s", want, out)
			}
		}
		out = s.MustRun(t, kubectl, "", "get", "controllerrevisions")
		if !stsMatch(`(?m)^plain-\w+\s+statefulset\.apps/plain\s+1\s+\S+$`, out) {
			t.Fatalf("kubectl get controllerrevisions:\n%s", out)
		}
	})

	t.Run("rolling update, history and undo", func(t *testing.T) {
		w := watchPods(t, cs, "app=plain")
		s.MustRun(t, kubectl, "", "set", "env", "sts/plain", "VERSION=2")
		s.MustRun(t, kubectls["1.33"], "", "rollout", "status", "sts/plain", "--timeout=3m")
		if got := w.created(); !slices.Equal(got, []string{"plain-2", "plain-1", "plain-0"}) {
			t.Fatalf("the update recreated %v, want plain-2, plain-1, plain-0", got)
		}
		w.expectReplacedInOrder(t, []string{"plain-2", "plain-1", "plain-0"})
		expectVersion(t, cs, "plain", 3, "2")
		waitSetStatus(t, cs, "plain", func(st appsv1.StatefulSetStatus) bool {
			return st.CurrentRevision == st.UpdateRevision && st.UpdatedReplicas == 3 && st.CurrentReplicas == 3
		})

		for _, minor := range []string{"1.32", "1.33"} {
			out := s.MustRun(t, kubectls[minor], "", "rollout", "history", "sts/plain")
			if !stsMatch(`(?m)^1\s+<none>$`, out) || !stsMatch(`(?m)^2\s+<none>$`, out) {
				t.Fatalf("kubectl %s rollout history:\n%s", minor, out)
			}
			out = s.MustRun(t, kubectls[minor], "", "rollout", "history", "sts/plain", "--revision=1")
			if !strings.Contains(out, "VERSION:\t1") && !stsMatch(`VERSION:\s+1`, out) {
				t.Fatalf("kubectl %s rollout history --revision=1:\n%s", minor, out)
			}
		}

		w = watchPods(t, cs, "app=plain")
		out := s.MustRun(t, kubectls["1.32"], "", "rollout", "undo", "sts/plain")
		if !strings.Contains(out, "rolled back") {
			t.Fatalf("kubectl rollout undo: %q", out)
		}
		s.MustRun(t, kubectls["1.32"], "", "rollout", "status", "sts/plain", "--timeout=3m")
		expectVersion(t, cs, "plain", 3, "1")
		if got := w.created(); !slices.Equal(got, []string{"plain-2", "plain-1", "plain-0"}) {
			t.Fatalf("the undo recreated %v, want plain-2, plain-1, plain-0", got)
		}
		// The undo renumbered revision 1 to 3: the history is 2, 3.
		out = s.MustRun(t, kubectls["1.33"], "", "rollout", "history", "sts/plain")
		if stsMatch(`(?m)^1\s`, out) || !stsMatch(`(?m)^2\s+<none>$`, out) || !stsMatch(`(?m)^3\s+<none>$`, out) {
			t.Fatalf("history after undo:\n%s", out)
		}
		revs, err := cs.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=plain"})
		if err != nil || len(revs.Items) != 2 {
			t.Fatalf("revisions after undo: %v, %v", revs, err)
		}
		// Undo again: back to VERSION=2, and nothing to undo to twice.
		s.MustRun(t, kubectls["1.33"], "", "rollout", "undo", "sts/plain")
		s.MustRun(t, kubectls["1.33"], "", "rollout", "status", "sts/plain", "--timeout=3m")
		expectVersion(t, cs, "plain", 3, "2")
	})

	t.Run("scale down from the highest ordinal", func(t *testing.T) {
		w := watchPods(t, cs, "app=plain")
		s.MustRun(t, kubectl, "", "scale", "sts/plain", "--replicas=1")
		harness.Eventually(t, 2*time.Minute, func() error {
			if n := len(podsOf(t, cs, "default", "app=plain")); n != 1 {
				return fmt.Errorf("%d pods", n)
			}
			return nil
		})
		w.expectDeletedInOrder(t, []string{"plain-2", "plain-1"})
		checkEvents(t, cs, "plain", "SuccessfulDelete", "delete Pod plain-2 in StatefulSet plain successful")
		waitSetStatus(t, cs, "plain", func(st appsv1.StatefulSetStatus) bool { return st.Replicas == 1 && st.ReadyReplicas == 1 })
	})

	t.Run("volumes", func(t *testing.T) {
		w := watchPods(t, cs, "app=web")
		s.MustRun(t, kubectl, webSet, "apply", "-f", "-")
		for _, minor := range []string{"1.32", "1.33"} {
			s.MustRun(t, kubectls[minor], "", "rollout", "status", "sts/web", "--timeout=4m")
		}
		w.expectOrdered(t, "web", 3)
		checkPods(t, cs, "web", 3)
		ids := map[string]string{}
		for i := range 3 {
			name := fmt.Sprintf("web-%d", i)
			claim, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data-"+name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("claim of %s: %v", name, err)
			}
			if claim.Labels["app"] != "web" || claim.Status.Phase != corev1.ClaimBound {
				t.Fatalf("claim data-%s: labels %v phase %s", name, claim.Labels, claim.Status.Phase)
			}
			ids[name] = strings.TrimSpace(s.MustRun(t, kubectl, "", "exec", name, "--", "cat", "/data/id"))
			if !strings.HasPrefix(ids[name], name+" ") {
				t.Fatalf("%s wrote %q", name, ids[name])
			}
		}
		old, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldClaim, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data-web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.MustRun(t, kubectl, "", "delete", "pod", "web-1", "--wait=false")
		harness.Eventually(t, 3*time.Minute, func() error {
			p, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.UID == old.UID || !ready(p) {
				return fmt.Errorf("web-1 not replaced and ready yet")
			}
			return nil
		})
		again := strings.TrimSpace(s.MustRun(t, kubectl, "", "exec", "web-1", "--", "cat", "/data/id"))
		if again != ids["web-1"] {
			t.Fatalf("the new web-1 reads %q, the old one wrote %q", again, ids["web-1"])
		}
		claim, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data-web-1", metav1.GetOptions{})
		if err != nil || claim.UID != oldClaim.UID {
			t.Fatalf("claim data-web-1 was replaced: %v, %v", claim, err)
		}
	})

	t.Run("claim retention policy", func(t *testing.T) {
		ctx := context.Background()
		claims := cs.CoreV1().PersistentVolumeClaims("default")
		s.MustRun(t, kubectl, "", "patch", "sts", "web", "-p", `{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete","whenDeleted":"Delete"}}}`)
		// The claims in range become the set's.
		harness.Eventually(t, time.Minute, func() error {
			for i := range 3 {
				c, err := claims.Get(ctx, fmt.Sprintf("data-web-%d", i), metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(c.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "StatefulSet" && r.Name == "web" }) {
					return fmt.Errorf("%s owners %v", c.Name, c.OwnerReferences)
				}
			}
			return nil
		})
		// Scaled down, web-2 takes its claim with it.
		s.MustRun(t, kubectl, "", "scale", "sts/web", "--replicas=2")
		harness.Eventually(t, 2*time.Minute, func() error {
			if _, err := claims.Get(ctx, "data-web-2", metav1.GetOptions{}); err == nil {
				return fmt.Errorf("data-web-2 is still there")
			}
			return nil
		})
		if _, err := claims.Get(ctx, "data-web-1", metav1.GetOptions{}); err != nil {
			t.Fatalf("data-web-1 went too: %v", err)
		}
		// Deleted, the set takes the others.
		s.MustRun(t, kubectl, "", "delete", "sts", "web", "--wait=false")
		harness.Eventually(t, 2*time.Minute, func() error {
			list, err := claims.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return err
			}
			if len(list.Items) > 0 {
				return fmt.Errorf("%d claims left", len(list.Items))
			}
			return nil
		})
	})
}

// podWatch records the pod events of one label selector from the moment
// it starts.
type podWatch struct {
	mu     sync.Mutex
	events []podEvent
}

type podEvent struct {
	typ   watch.EventType
	name  string
	uid   string
	ready bool
	gone  bool // being deleted or deleted
}

func watchPods(t *testing.T, cs kubernetes.Interface, selector string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// From now on: a watch without a resourceVersion would start with the
	// pods that exist.
	list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		t.Fatalf("listing pods %s: %v", selector, err)
	}
	wi, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatalf("watching pods %s: %v", selector, err)
	}
	w := &podWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, podEvent{typ: ev.Type, name: p.Name, uid: string(p.UID), ready: ready(p),
				gone: ev.Type == watch.Deleted || p.DeletionTimestamp != nil})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); wi.Stop(); <-done })
	return w
}

func (w *podWatch) snapshot() []podEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// created lists the pods added since the watch started, in order.
func (w *podWatch) created() []string {
	var out []string
	for _, e := range w.snapshot() {
		if e.typ == watch.Added {
			out = append(out, e.name)
		}
	}
	return out
}

// expectOrdered checks that each pod <set>-i (i > 0) was created only
// after <set>-(i-1) had been seen ready, and that none was created twice.
func (w *podWatch) expectOrdered(t *testing.T, set string, n int) {
	t.Helper()
	isReady := map[string]bool{}
	for _, e := range w.snapshot() {
		if e.typ == watch.Added {
			var i int
			if _, err := fmt.Sscanf(strings.TrimPrefix(e.name, set+"-"), "%d", &i); err == nil && i > 0 {
				if prev := fmt.Sprintf("%s-%d", set, i-1); !isReady[prev] {
					t.Fatalf("%s was created before %s was ready (events %v)", e.name, prev, w.snapshot())
				}
			}
		}
		isReady[e.name] = e.ready && !e.gone
	}
	if got := w.created(); len(got) != n {
		t.Fatalf("created %v, want %d pods", got, n)
	}
}

// expectReplacedInOrder checks that the pods were deleted in order, each
// only after the replacement of the one before was ready.
func (w *podWatch) expectReplacedInOrder(t *testing.T, names []string) {
	t.Helper()
	evs := w.snapshot()
	firstGone := func(name string) int {
		return slices.IndexFunc(evs, func(e podEvent) bool { return e.name == name && e.gone })
	}
	for i := 1; i < len(names); i++ {
		prev, cur := names[i-1], names[i]
		at := firstGone(cur)
		if at < 0 {
			t.Fatalf("%s was never deleted (events %v)", cur, evs)
		}
		// Before cur was deleted, prev's replacement was seen ready.
		replaced := slices.ContainsFunc(evs[:at], func(e podEvent) bool {
			return e.name == prev && e.ready && !e.gone && e.uid != evs[firstGone(prev)].uid
		})
		if firstGone(prev) > at || !replaced {
			t.Fatalf("%s was deleted before %s was replaced and ready (events %v)", cur, prev, evs)
		}
	}
}

// expectDeletedInOrder checks that each pod's deletion started only after
// the one before it was gone.
func (w *podWatch) expectDeletedInOrder(t *testing.T, names []string) {
	t.Helper()
	evs := w.snapshot()
	for i := 1; i < len(names); i++ {
		deleted := slices.IndexFunc(evs, func(e podEvent) bool { return e.name == names[i-1] && e.typ == watch.Deleted })
		started := slices.IndexFunc(evs, func(e podEvent) bool { return e.name == names[i] && e.gone })
		if deleted < 0 || started < 0 || started < deleted {
			t.Fatalf("%s began terminating (event %d) before %s was deleted (event %d): %v", names[i], started, names[i-1], deleted, evs)
		}
	}
}

// checkPods checks the identity the set gives its pods.
func checkPods(t *testing.T, cs kubernetes.Interface, set string, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("%s-%d", set, i)
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := metav1.GetControllerOf(p)
		if p.Spec.Hostname != name || p.Spec.Subdomain != set || ref == nil || ref.Kind != "StatefulSet" || ref.Name != set ||
			p.Labels["statefulset.kubernetes.io/pod-name"] != name || p.Labels["apps.kubernetes.io/pod-index"] != fmt.Sprint(i) ||
			p.Labels["controller-revision-hash"] == "" {
			t.Fatalf("pod %s: hostname %q subdomain %q owner %+v labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, ref, p.Labels)
		}
	}
}

// checkEvents waits for an Event about the set with reason and message.
func checkEvents(t *testing.T, cs kubernetes.Interface, set, reason, message string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		evs, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == set && e.Reason == reason && e.Message == message &&
				e.Source.Component == "statefulset-controller" {
				return nil
			}
		}
		return fmt.Errorf("no %s event %q", reason, message)
	})
}

// expectVersion checks that the set's n pods run template VERSION v.
func expectVersion(t *testing.T, cs kubernetes.Interface, set string, n int, v string) {
	t.Helper()
	harness.Eventually(t, time.Minute, func() error {
		pods := podsOf(t, cs, "default", "app="+set)
		if len(pods) != n {
			return fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || !ready(&p) {
				return fmt.Errorf("%s not ready", p.Name)
			}
			if got := p.Spec.Containers[0].Env; len(got) != 1 || got[0].Value != v {
				return fmt.Errorf("%s runs %v, want VERSION=%s", p.Name, got, v)
			}
		}
		return nil
	})
}

func waitSetStatus(t *testing.T, cs kubernetes.Interface, name string, ok func(appsv1.StatefulSetStatus) bool) {
	t.Helper()
	harness.Eventually(t, time.Minute, func() error {
		s, err := cs.AppsV1().StatefulSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !ok(s.Status) {
			return fmt.Errorf("status %+v", s.Status)
		}
		return nil
	})
}

func stsMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
