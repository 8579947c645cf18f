package replicaset_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/replicaset"
	"github.com/kubebus/kubebus/test/harness"
)

// noServerKCM keeps `kubebus server` from running its own controller-manager:
// the test runs the controllers under test itself.
var noServerKCM = []string{"--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts}

// startController runs the ReplicaSet controller on bus-fed caches under a
// Manager until the test ends.
func startController(t *testing.T, s *harness.Server) kubernetes.Interface {
	t.Helper()
	cs := s.Clientset(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, js := s.BusConnect(t, "system:kube-controller-manager")
	inf, err := cache.New(cache.Config{JetStream: js, Component: "test-kcm", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, stopRec := controllers.Recorder(ctx, cs, "replicaset-controller")
	c, err := replicaset.New(replicaset.Config{Client: cs, Pods: inf.Pods, ReplicaSets: inf.ReplicaSets, Recorder: rec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: logger}
	m.AddCache(inf)
	m.Add(c)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRec()
		nc.Close()
	})
	return cs
}

// creations counts, from a watch, every pod ever added in a namespace and
// the most pods that existed at once.
type creations struct {
	mu      sync.Mutex
	added   map[types.UID]bool
	live    map[types.UID]bool
	maxLive int
}

func countCreations(t *testing.T, cs kubernetes.Interface, ns string) *creations {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &creations{added: map[types.UID]bool{}, live: map[types.UID]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c.mu.Lock()
			switch {
			case ev.Type == watch.Deleted:
				delete(c.live, p.UID)
			case ev.Type == watch.Added:
				c.added[p.UID] = true
				c.live[p.UID] = true
			}
			c.maxLive = max(c.maxLive, len(c.live))
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func (c *creations) counts() (added, live, maxLive int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.added), len(c.live), c.maxLive
}

func ownedPods(t *testing.T, cs kubernetes.Interface, rs *appsv1.ReplicaSet) []corev1.Pod {
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

func getRS(t *testing.T, cs kubernetes.Interface, ns, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := cs.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// waitOwned waits until the ReplicaSet owns n pods and its status says so.
func waitOwned(t *testing.T, cs kubernetes.Interface, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	harness.Eventually(t, 60*time.Second, func() error {
		rs := getRS(t, cs, ns, name)
		pods = ownedPods(t, cs, rs)
		if len(pods) != n {
			return fmt.Errorf("%d pods owned, want %d", len(pods), n)
		}
		if rs.Status.Replicas != int32(n) || rs.Status.ObservedGeneration != rs.Generation {
			return fmt.Errorf("status replicas %d observedGeneration %d of %d", rs.Status.Replicas, rs.Status.ObservedGeneration, rs.Generation)
		}
		return nil
	})
	return pods
}

func markReady(t *testing.T, cs kubernetes.Interface, pods ...corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("marking %s ready: %v", p.Name, err)
		}
	}
}

const rsYAML = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
  namespace: %s
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.example/app:v1
`

// TestIntegrationReplicaSet: pods are created with owner references and
// adopted or released by label; scaling creates exactly what is missing (a
// watch counts every creation), deletes the not-ready pods first, and the
// status follows; a ReplicaSet being deleted creates nothing.
func TestIntegrationReplicaSet(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", noServerKCM...)
	cs := startController(t, s)
	kubectl := harness.Kubectl(t)
	const ns = "rs"
	ctx := context.Background()
	s.MustRun(t, kubectl, "", "create", "namespace", ns)
	created := countCreations(t, cs, ns)

	// An orphan that matches is adopted: only two pods are created.
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.MustRun(t, kubectl, fmt.Sprintf(rsYAML, ns), "apply", "-f", "-")
	pods := waitOwned(t, cs, ns, "web", 3)
	adopted := false
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref.Kind != "ReplicaSet" || ref.Name != "web" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s owner %+v", p.Name, ref)
		}
		if p.Name == "orphan" {
			adopted = true
		} else if p.GenerateName != "web-" {
			t.Errorf("pod %s generateName %q", p.Name, p.GenerateName)
		}
	}
	if !adopted {
		t.Error("the orphan was not adopted")
	}

	// A pod relabelled out of the selector is released and replaced.
	s.MustRun(t, kubectl, "", "-n", ns, "label", "pod", "orphan", "app=other", "--overwrite")
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.OwnerReferences) != 0 {
			return fmt.Errorf("still owned: %+v", p.OwnerReferences)
		}
		return nil
	})
	waitOwned(t, cs, ns, "web", 3)

	// Scale to 60 and back: exactly the missing pods are created, never more.
	s.MustRun(t, kubectl, "", "-n", ns, "scale", "rs/web", "--replicas=60")
	pods = waitOwned(t, cs, ns, "web", 60)
	if added, _, maxLive := created.counts(); added != 1+2+1+57 || maxLive != 61 {
		t.Errorf("%d pods created (want 61 with the orphan), at most %d at once (want 61)", added, maxLive)
	}

	// Scale down to 5: the five ready pods stay.
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	ready := pods[10:15]
	markReady(t, cs, ready...)
	s.MustRun(t, kubectl, "", "-n", ns, "scale", "rs/web", "--replicas=5")
	left := waitOwned(t, cs, ns, "web", 5)
	keep := map[string]bool{}
	for _, p := range ready {
		keep[p.Name] = true
	}
	for _, p := range left {
		if !keep[p.Name] {
			t.Errorf("pod %s (not ready) outlived the ready ones", p.Name)
		}
	}
	harness.Eventually(t, 30*time.Second, func() error {
		st := getRS(t, cs, ns, "web").Status
		if st.Replicas != 5 || st.ReadyReplicas != 5 || st.AvailableReplicas != 5 || st.FullyLabeledReplicas != 5 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})

	// Being deleted (foreground, and no garbage collector here to finish
	// it): a lost pod is not replaced.
	if err := cs.AppsV1().ReplicaSets(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, func() error {
		if getRS(t, cs, ns, "web").DeletionTimestamp == nil {
			return fmt.Errorf("not being deleted yet")
		}
		return nil
	})
	if err := cs.CoreV1().Pods(ns).Delete(ctx, left[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if st := getRS(t, cs, ns, "web").Status; st.Replicas != 4 {
			return fmt.Errorf("status replicas %d, want 4", st.Replicas)
		}
		return nil
	})
	if n := len(ownedPods(t, cs, getRS(t, cs, ns, "web"))); n != 4 {
		t.Errorf("a replicaset being deleted has %d pods, want 4", n)
	}
	if added, _, _ := created.counts(); added != 61 {
		t.Errorf("%d pods created in all, want 61", added)
	}

	// Events for kubectl describe, on a small ReplicaSet (the recorder's
	// spam filter keeps 25 per object and source).
	const evNS = "events"
	s.MustRun(t, kubectl, "", "create", "namespace", evNS)
	s.MustRun(t, kubectl, fmt.Sprintf(rsYAML, evNS), "apply", "-f", "-")
	waitOwned(t, cs, evNS, "web", 3)
	s.MustRun(t, kubectl, "", "-n", evNS, "scale", "rs/web", "--replicas=1")
	waitOwned(t, cs, evNS, "web", 1)
	harness.Eventually(t, 30*time.Second, func() error {
		events, err := cs.CoreV1().Events(evNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		reasons := map[string]int32{}
		for _, e := range events.Items {
			reasons[e.Reason] += max(e.Count, 1)
		}
		if reasons[replicaset.ReasonSuccessfulCreate] != 3 || reasons[replicaset.ReasonSuccessfulDelete] != 2 {
			return fmt.Errorf("events %v", reasons)
		}
		return nil
	})
	desc := s.MustRun(t, kubectl, "", "-n", evNS, "describe", "rs/web")
	if !strings.Contains(desc, "SuccessfulCreate") || !strings.Contains(desc, "SuccessfulDelete") {
		t.Errorf("kubectl describe:\n%s", desc)
	}
}

// TestIntegrationReplicaSetMinReadySeconds: ready pods count as available
// only after minReadySeconds, without any further event.
func TestIntegrationReplicaSetMinReadySeconds(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", noServerKCM...)
	cs := startController(t, s)
	kubectl := harness.Kubectl(t)
	const ns = "slow"
	s.MustRun(t, kubectl, "", "create", "namespace", ns)
	yaml := strings.Replace(fmt.Sprintf(rsYAML, ns), "  replicas: 3\n", "  replicas: 3\n  minReadySeconds: 2\n", 1)
	s.MustRun(t, kubectl, yaml, "apply", "-f", "-")
	pods := waitOwned(t, cs, ns, "web", 3)
	markReady(t, cs, pods...)
	readyAt := time.Now()
	early := time.Duration(0)
	harness.Eventually(t, 30*time.Second, func() error {
		st := getRS(t, cs, ns, "web").Status
		if st.ReadyReplicas != 3 {
			return fmt.Errorf("ready %d", st.ReadyReplicas)
		}
		// The transition time has whole seconds: available comes 1-2s
		// after the pods were marked ready.
		if since := time.Since(readyAt); st.AvailableReplicas != 0 && since < time.Second && early == 0 {
			early = since
		}
		if st.AvailableReplicas != 3 {
			return fmt.Errorf("available %d", st.AvailableReplicas)
		}
		return nil
	})
	if early > 0 {
		t.Errorf("pods available %v after becoming ready, before minReadySeconds", early)
	}
}
