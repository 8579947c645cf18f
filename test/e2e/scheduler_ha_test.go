package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubebus/kubebus/test/harness"
)

// schedulerConfigFile writes a KubeSchedulerConfiguration with a short
// lease (4s, as the controller-manager HA test) and the given client rate
// limit, and returns its path.
func schedulerConfigFile(t *testing.T, qps, burst int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
clientConnection:
  qps: %d
  burst: %d
`, qps, burst)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startScheduler runs `kubebus scheduler` against the server as
// system:kube-scheduler, with that identity's rights on the API and the
// bus.
func startScheduler(t *testing.T, s *harness.Server, instance, configFile string) *harness.Process {
	t.Helper()
	return harness.StartProcess(t, "scheduler", "--kubeconfig", harness.UserKubeconfig(t, s, "system:kube-scheduler"), "--nats-url", s.BusURL(t),
		"--config", configFile, "--instance", instance)
}

// schedulerLeaseHolder returns the kube-scheduler Lease's holder identity.
func schedulerLeaseHolder(ctx context.Context, cs kubernetes.Interface) string {
	l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// holds reports whether a lease holder identity (hostname_pid) is p's.
func holds(holder string, p *harness.Process) bool {
	return strings.HasSuffix(holder, fmt.Sprintf("_%d", p.Pid()))
}

// bindLog follows every pod of a namespace through a watch started before
// the pods exist and records each transition of spec.nodeName.
type bindLog struct {
	mu      sync.Mutex
	node    map[string]string    // pod name -> the node it was bound to
	uid     map[string]string    // pod name -> UID
	binds   map[string]int       // pod name -> transitions from "" to a node
	boundAt map[string]time.Time // pod name -> when the binding was seen
	bad     []string             // moves, unbindings and deletions
	onBound func(bound int)
}

func newBindLog() *bindLog {
	return &bindLog{node: map[string]string{}, uid: map[string]string{}, binds: map[string]int{}, boundAt: map[string]time.Time{}}
}

// run watches namespace ns from resourceVersion rv until ctx ends,
// resuming across dropped watches.
func (b *bindLog) run(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, rv string) {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Error(err)
		return
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return
			}
			if p, ok := ev.Object.(*corev1.Pod); ok {
				b.observe(ev.Type, p)
			}
		}
	}
}

func (b *bindLog) observe(typ watch.EventType, p *corev1.Pod) {
	b.mu.Lock()
	prev := b.node[p.Name]
	b.uid[p.Name] = string(p.UID)
	newlyBound := false
	switch {
	case typ == watch.Deleted:
		b.bad = append(b.bad, fmt.Sprintf("pod %s was deleted", p.Name))
	case prev == "" && p.Spec.NodeName != "":
		b.node[p.Name] = p.Spec.NodeName
		b.binds[p.Name]++
		b.boundAt[p.Name] = time.Now()
		newlyBound = true
	case prev != "" && p.Spec.NodeName != prev:
		b.bad = append(b.bad, fmt.Sprintf("pod %s went from node %q to %q", p.Name, prev, p.Spec.NodeName))
		b.node[p.Name] = p.Spec.NodeName
		if p.Spec.NodeName != "" {
			b.binds[p.Name]++
		}
	}
	bound := len(b.boundAt)
	b.mu.Unlock()
	if newlyBound && b.onBound != nil {
		b.onBound(bound)
	}
}

func (b *bindLog) bound() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.boundAt)
}

// scheduledEvents counts Scheduled and rejected-binding events per pod UID
// in namespace ns.
func scheduledEvents(ctx context.Context, cs kubernetes.Interface, ns string) (scheduled map[string]int, rejected int, err error) {
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	scheduled = map[string]int{}
	for _, e := range evs.Items {
		n := int(max(e.Count, 1))
		switch {
		case e.Reason == "Scheduled":
			scheduled[string(e.InvolvedObject.UID)] += n
		case e.Reason == "FailedScheduling" && strings.HasPrefix(e.Message, "Binding rejected"):
			rejected += n
		}
	}
	return scheduled, rejected, nil
}

// TestIntegrationSchedulerHA: two `kubebus scheduler` replicas; 1,000
// pending pods; the leader is killed with SIGKILL while it binds them. The
// standby takes the lease and binds the rest. Every pod ends up bound
// exactly once: a watch started before the pods existed sees each pod's
// spec.nodeName go from "" to a node once and never change, the API server
// answered exactly 1,000 successful bindings, and no pod has two Scheduled
// events (pods bound by the new leader have exactly one).
func TestIntegrationSchedulerHA(t *testing.T) {
	harness.SkipShort(t)
	const (
		ns     = "sched-ha"
		pods   = 1000
		nodes  = 20
		killAt = 150
	)
	s := harness.StartServer(t, "", "--disable-scheduler", "--disable-controller-manager", noServiceAccounts)
	cs := s.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		schedNode(ctx, t, cs, fmt.Sprintf("ha-node-%02d", i), "64", nil)
	}

	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := newBindLog()
	kill := make(chan struct{})
	var once sync.Once
	log.onBound = func(n int) {
		if n >= killAt {
			once.Do(func() { close(kill) })
		}
	}
	go log.run(ctx, t, cs, ns, list.ResourceVersion)

	// The pods exist, pending, before any scheduler runs.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= pods {
					return
				}
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ha-%04d", i)}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Errorf("creating pod %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Each replica may send 100 requests/s: a bind and an event per pod, so
	// the leader is still binding when it is killed.
	cfg := schedulerConfigFile(t, 100, 100)
	a := startScheduler(t, s, "a", cfg)
	b := startScheduler(t, s, "b", cfg)
	select {
	case <-kill:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the leader never bound %d pods (bound %d)", killAt, log.bound())
	}
	holder := schedulerLeaseHolder(ctx, cs)
	leader, standby := a, b
	if holds(holder, b) {
		leader, standby = b, a
	}
	if !holds(holder, leader) {
		t.Fatalf("lease holder %q is neither replica (pids %d, %d)", holder, a.Pid(), b.Pid())
	}
	leader.Kill()
	killed := time.Now()
	boundAtKill := log.bound()
	t.Logf("killed the leader (pid %d) with %d of %d pods bound", leader.Pid(), boundAtKill, pods)
	if boundAtKill >= pods {
		t.Fatalf("the leader bound all %d pods before it was killed; the test needs it killed mid-way", pods)
	}

	var takeover time.Time
	harness.Eventually(t, 30*time.Second, func() error {
		if h := schedulerLeaseHolder(ctx, cs); !holds(h, standby) {
			return fmt.Errorf("lease held by %q", h)
		}
		takeover = time.Now()
		return nil
	})
	t.Logf("the standby (pid %d) took the lease %v after the kill", standby.Pid(), takeover.Sub(killed).Round(time.Millisecond))
	harness.Eventually(t, 2*time.Minute, func() error {
		if n := log.bound(); n != pods {
			return fmt.Errorf("%d of %d pods bound", n, pods)
		}
		return nil
	})

	// Judge the watch's record.
	log.mu.Lock()
	for _, msg := range log.bad {
		t.Error(msg)
	}
	byNode := map[string]int{}
	var afterTakeover []string
	for i := range pods {
		name := fmt.Sprintf("ha-%04d", i)
		if n := log.binds[name]; n != 1 {
			t.Errorf("pod %s was bound %d times", name, n)
		}
		byNode[log.node[name]]++
		if log.boundAt[name].After(takeover) {
			afterTakeover = append(afterTakeover, log.uid[name])
		}
	}
	uids := make(map[string]string, len(log.uid))
	for name, uid := range log.uid {
		uids[uid] = name
	}
	log.mu.Unlock()
	if len(afterTakeover) == 0 {
		t.Fatalf("no pod was bound after the standby took over")
	}
	t.Logf("%d pods bound after the takeover; pods per node: %v", len(afterTakeover), byNode)

	// The API server accepted exactly one binding per pod.
	if got := s.APIRequests(t, `resource="pods"`, `subresource="binding"`, `code="201"`); got != pods {
		t.Errorf("the API server accepted %v bindings, want exactly %d", got, pods)
	}
	t.Logf("bindings refused with 409: %v", s.APIRequests(t, `resource="pods"`, `subresource="binding"`, `code="409"`))

	// Events: never two Scheduled for one pod; the new leader's pods have
	// exactly one (the dead leader may have died between a bind and its
	// event).
	harness.Eventually(t, 30*time.Second, func() error {
		scheduled, _, err := scheduledEvents(ctx, cs, ns)
		if err != nil {
			return err
		}
		for _, uid := range afterTakeover {
			if scheduled[uid] == 0 {
				return fmt.Errorf("pod %s, bound by the new leader, has no Scheduled event yet", uids[uid])
			}
		}
		return nil
	})
	scheduled, rejected, err := scheduledEvents(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	withEvent := 0
	for uid, n := range scheduled {
		if _, ours := uids[uid]; !ours {
			t.Errorf("a Scheduled event names UID %s, no pod of the test", uid)
		}
		if n > 1 {
			t.Errorf("pod %s has %d Scheduled events", uids[uid], n)
		}
		withEvent++
	}
	t.Logf("%d of %d pods have their Scheduled event; %d bindings were rejected", withEvent, pods, rejected)
}
