package daemonset

import (
	"fmt"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/controllers/history"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// dsOpt changes a test DaemonSet.
type dsOpt func(*appsv1.DaemonSet)

func testDS(opts ...dsOpt) *appsv1.DaemonSet {
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-uid", Generation: 2},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: new(intstr.FromInt32(1)), MaxSurge: new(intstr.FromInt32(0))}},
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

func withStrategy(unavailable, surge intstr.IntOrString) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &unavailable, MaxSurge: &surge}
	}
}

func withNodeSelector(k, v string) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{k: v} }
}

func withTolerations(t ...corev1.Toleration) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Tolerations = t }
}

// nodeOpt changes a test node.
type nodeOpt func(*corev1.Node)

func testNode(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func label(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }

func taint(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func nodes(n int, opts ...nodeOpt) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = testNode(fmt.Sprintf("n%d", i), opts...)
	}
	return out
}

// podOpt changes a test pod.
type podOpt func(*corev1.Pod)

// podSeq numbers test pods; tests run in parallel.
var podSeq atomic.Int64

// testPod is a pod of ds (of revision hash) for node, bound to it and
// ready since t0 unless opts say otherwise.
func testPod(ds *appsv1.DaemonSet, node, hash string, opts ...podOpt) *corev1.Pod {
	seq := podSeq.Add(1)
	p := newPod(ds, podTemplate(ds, hash), node)
	p.Name = fmt.Sprintf("%s-%s-%d", ds.Name, node, seq)
	p.UID = types.UID(p.Name)
	p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(seq) * time.Second))
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func unbound(p *corev1.Pod) { p.Spec.NodeName = "" }

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = new(metav1.NewTime(t0)) }

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func readyAt(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at) }
}

func hashOf(p *corev1.Pod) string { return p.Labels[history.ControllerRevisionHashLabel] }

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
