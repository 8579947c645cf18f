package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

func replicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
			},
		},
	}
}

// leaseHolder returns the controller-manager Lease's holder identity.
func leaseHolder(ctx context.Context, cs *kubernetes.Clientset) string {
	l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// podTally watches pods with a label and counts every pod ever created and
// the most that existed at once.
type podTally struct {
	mu      sync.Mutex
	created map[string]bool
	live    map[string]bool
	max     int
	deleted int
	onAdd   func(n int)
}

func (p *podTally) run(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, selector string) {
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		p.mu.Lock()
		switch ev.Type {
		case watch.Added:
			p.created[pod.Name] = true
			p.live[pod.Name] = true
		case watch.Deleted:
			delete(p.live, pod.Name)
			p.deleted++
		}
		if len(p.live) > p.max {
			p.max = len(p.live)
		}
		n := len(p.created)
		p.mu.Unlock()
		if ev.Type == watch.Added && p.onAdd != nil {
			p.onAdd(n)
		}
	}
}

func (p *podTally) counts() (created, live, max, deleted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.created), len(p.live), p.max, p.deleted
}

var shortLease = []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}

// TestIntegrationControllerManagerHA: two controller-manager replicas; the
// leader is killed with SIGKILL during a scale-up; the other takes over
// within the lease duration and the final pod count is exact, with no pod
// ever created twice.
func TestIntegrationControllerManagerHA(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := harness.StartControllerManager(t, s, append([]string{"--instance=a"}, shortLease...)...)
	b := harness.StartControllerManager(t, s, append([]string{"--instance=b"}, shortLease...)...)
	var holder string
	harness.Eventually(t, 30*time.Second, func() error {
		if holder = leaseHolder(ctx, cs); holder == "" {
			return fmt.Errorf("no controller-manager holds the lease")
		}
		return nil
	})
	leader, standby := a, b
	if strings.HasSuffix(holder, fmt.Sprintf("_%d", b.Pid())) {
		leader, standby = b, a
	}
	if !strings.HasSuffix(holder, fmt.Sprintf("_%d", leader.Pid())) {
		t.Fatalf("lease holder %q is neither replica (pids %d, %d)", holder, a.Pid(), b.Pid())
	}
	const replicas = 1000
	kill := make(chan struct{})
	var once sync.Once
	tally := &podTally{created: map[string]bool{}, live: map[string]bool{}, onAdd: func(n int) {
		if n >= 100 {
			once.Do(func() { close(kill) })
		}
	}}
	go tally.run(ctx, t, cs, "app=ha")
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, replicaSet("ha", 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().ReplicaSets("default").UpdateScale(ctx, "ha", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "ha"}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kill:
	case <-time.After(time.Minute):
		t.Fatal("the scale-up never reached 100 pods")
	}
	leader.Kill()
	killed := time.Now()
	created, _, _, _ := tally.counts()
	t.Logf("killed the leader (pid %d) with %d pods created", leader.Pid(), created)
	harness.Eventually(t, 30*time.Second, func() error {
		if h := leaseHolder(ctx, cs); !strings.HasSuffix(h, fmt.Sprintf("_%d", standby.Pid())) {
			return fmt.Errorf("lease held by %q", h)
		}
		return nil
	})
	takeover := time.Since(killed)
	t.Logf("the standby took the lease %v after the kill", takeover)
	if takeover > 4*time.Second+2*time.Second {
		t.Errorf("takeover took %v, more than the 4s lease plus a 2s margin", takeover)
	}
	harness.Eventually(t, 2*time.Minute, func() error {
		if _, live, _, _ := tally.counts(); live != replicas {
			return fmt.Errorf("%d of %d pods", live, replicas)
		}
		return nil
	})
	// Let any stray duplicate show up before judging.
	harness.Eventually(t, 10*time.Second, func() error {
		rs, err := cs.AppsV1().ReplicaSets("default").Get(ctx, "ha", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if rs.Status.Replicas != replicas || rs.Status.ObservedGeneration != rs.Generation {
			return fmt.Errorf("status %d/%d observed %d of %d", rs.Status.Replicas, replicas, rs.Status.ObservedGeneration, rs.Generation)
		}
		return nil
	})
	created, live, max, deleted := tally.counts()
	if created != replicas || max != replicas || deleted != 0 || live != replicas {
		t.Fatalf("pods created %d, at most %d at once, %d deleted, %d now; want exactly %d created and none deleted", created, max, deleted, live, replicas)
	}
}

// TestIntegrationControllerManagerRestartWithoutLists: with 20,000 objects
// present, a restarted controller-manager rebuilds from the bus with zero
// LIST calls on the API server and reconciles again.
func TestIntegrationControllerManagerRestartWithoutLists(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	ctx := context.Background()
	kcm := harness.StartControllerManager(t, s, shortLease...)
	const total = 20000
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("obj-%05d", i)}}
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Errorf("create: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, replicaSet("before", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Wait with GETs only, so every LIST the server counts comes from the
	// controller-manager.
	waitRS := func(name string, n int32) {
		harness.Eventually(t, time.Minute, func() error {
			rs, err := cs.AppsV1().ReplicaSets("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if rs.Status.Replicas != n || rs.Status.ObservedGeneration != rs.Generation {
				return fmt.Errorf("replicaset %s has %d of %d pods", name, rs.Status.Replicas, n)
			}
			return nil
		})
	}
	waitRS("before", 3)
	kcm.Kill()
	lists := s.APIRequests(t, `verb="list"`)
	watches := s.APIRequests(t, `verb="watch"`)
	kcm.Start(t)
	restarted := time.Now()
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, replicaSet("after", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var leading time.Time
	harness.Eventually(t, time.Minute, func() error {
		if !strings.HasSuffix(leaseHolder(ctx, cs), fmt.Sprintf("_%d", kcm.Pid())) {
			return fmt.Errorf("the restarted controller-manager does not lead yet")
		}
		leading = time.Now()
		return nil
	})
	waitRS("after", 3)
	t.Logf("restarted controller-manager: took the lease %v after start (the dead one's 4s lease had to expire), reconciled a new ReplicaSet %v after taking it",
		leading.Sub(restarted), time.Since(leading))
	if got := s.APIRequests(t, `verb="list"`); got != lists {
		t.Fatalf("LIST requests went from %v to %v after the restart", lists, got)
	}
	if got := s.APIRequests(t, `verb="watch"`); got != watches {
		t.Fatalf("WATCH requests went from %v to %v after the restart", watches, got)
	}
}
