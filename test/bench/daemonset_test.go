package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkNodeLoadDaemonSet500: a DaemonSet over the 500 hollow nodes of
// the node load (`kubebus server` plus `kubebus kubelet --simulate=500`):
// seconds until its 500 pods exist, are bound, Running and available, then
// seconds for an image change to roll out with maxUnavailable 10% (50
// nodes at a time), and where the rollout's time goes: per node, the mean
// seconds from the old pod's deletion to its disappearance (the hollow
// kubelet finishing it), from there to the new pod's creation (the
// controller's next sync), to its binding (the scheduler) and to its
// readiness (the hollow kubelet).
func BenchmarkNodeLoadDaemonSet500(b *testing.B) {
	l := startNodeLoad(b)
	ctx := context.Background()
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		ns := fmt.Sprintf("daemonset-%d", iter)
		createNamespace(ctx, b, l.cs, ns)
		labels := map[string]string{"app": "agent"}
		unavailable := intstr.FromString("10%")
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &unavailable}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}}}}}}
		w, err := l.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			b.Fatal(err)
		}
		stages := make(chan podStages, 1)
		go func() { stages <- watchStages(w.ResultChan(), loadNodes) }()
		stop := l.measure(b, 10*time.Second)
		b.StartTimer()
		created := time.Now()
		if _, err := l.cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var st podStages
		select {
		case st = <-stages:
		case <-time.After(5 * time.Minute):
			b.Fatal("the pods did not all reach Running in 5 minutes")
		}
		w.Stop()
		waitDaemonSetRolledOut(ctx, b, l.cs, ns, loadNodes)
		available := time.Since(created)

		// The image change, watched pod by pod.
		w, err = l.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			b.Fatal(err)
		}
		phases := make(chan rolloutPhases, 1)
		go func() { phases <- watchRollout(w.ResultChan()) }()
		start := time.Now()
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"registry.k8s.io/pause:3.9"}]}}}}`)
		if _, err := l.cs.AppsV1().DaemonSets(ns).Patch(ctx, "agent", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		waitDaemonSetRolledOut(ctx, b, l.cs, ns, loadNodes)
		rollout := time.Since(start)
		b.StopTimer()
		w.Stop()
		ph := <-phases
		stop()
		b.ReportMetric(st.created.Sub(created).Seconds(), "s-all-exist")
		b.ReportMetric(st.bound.Sub(created).Seconds(), "s-all-scheduled")
		b.ReportMetric(st.running.Sub(created).Seconds(), "s-all-running")
		b.ReportMetric(available.Seconds(), "s-all-available")
		b.ReportMetric(rollout.Seconds(), "s-rollout")
		b.ReportMetric(ph.mean(ph.terminating), "s-mean-terminating")
		b.ReportMetric(ph.mean(ph.recreate), "s-mean-recreate")
		b.ReportMetric(ph.mean(ph.schedule), "s-mean-schedule")
		b.ReportMetric(ph.mean(ph.start), "s-mean-start")
		b.ReportMetric(float64(ph.maxUnavailable), "max-unavailable")
	}
}

// waitDaemonSetRolledOut waits until DaemonSet ns/agent observed its
// generation and has n updated, available pods.
func waitDaemonSetRolledOut(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string, n int32) {
	b.Helper()
	harness.Eventually(b, 10*time.Minute, func() error {
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := ds.Status
		if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled != n || st.UpdatedNumberScheduled != n || st.NumberAvailable != n {
			return fmt.Errorf("daemonset: %d desired, %d updated, %d available of %d", st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable, n)
		}
		return nil
	})
}

// rolloutPhases are the per-node durations of a rollout's replacements.
type rolloutPhases struct {
	terminating, recreate, schedule, start []time.Duration
	// maxUnavailable is the most nodes seen at once without a ready pod
	// that is not being deleted.
	maxUnavailable int
}

func (p rolloutPhases) mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return (sum / time.Duration(len(ds))).Seconds()
}

// watchRollout follows the pods of a rollout until the watch ends and
// times each node's replacement: old pod marked deleted, gone, new pod
// created, bound, ready.
func watchRollout(events <-chan watch.Event) rolloutPhases {
	type node struct{ deleting, gone, created, bound, ready time.Time }
	nodes := map[string]*node{}
	at := func(name string) *node {
		if nodes[name] == nil {
			nodes[name] = &node{}
		}
		return nodes[name]
	}
	target := func(p *corev1.Pod) string {
		if p.Spec.NodeName != "" {
			return p.Spec.NodeName
		}
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, f := range t.MatchFields {
					if len(f.Values) == 1 {
						return f.Values[0]
					}
				}
			}
		}
		return ""
	}
	unavailable := map[string]bool{}
	var ph rolloutPhases
	for ev := range events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		now := time.Now()
		n := at(target(p))
		isNew := p.Spec.Containers[0].Image == "registry.k8s.io/pause:3.9"
		switch {
		case !isNew && ev.Type == watch.Deleted:
			if n.gone.IsZero() {
				n.gone = now
			}
		case !isNew && p.DeletionTimestamp != nil:
			if n.deleting.IsZero() {
				n.deleting = now
			}
			unavailable[target(p)] = true
		case isNew:
			if n.created.IsZero() {
				n.created = now
			}
			if p.Spec.NodeName != "" && n.bound.IsZero() {
				n.bound = now
			}
			if podReady(p) && n.ready.IsZero() {
				n.ready = now
				delete(unavailable, target(p))
			}
		}
		ph.maxUnavailable = max(ph.maxUnavailable, len(unavailable))
	}
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := nodes[name]
		if n.deleting.IsZero() || n.gone.IsZero() || n.created.IsZero() || n.bound.IsZero() || n.ready.IsZero() {
			continue
		}
		ph.terminating = append(ph.terminating, n.gone.Sub(n.deleting))
		ph.recreate = append(ph.recreate, n.created.Sub(n.gone))
		ph.schedule = append(ph.schedule, n.bound.Sub(n.created))
		ph.start = append(ph.start, n.ready.Sub(n.bound))
	}
	return ph
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
