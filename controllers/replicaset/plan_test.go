package replicaset

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestReplicaDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		want          int32
		active, burst int
		diff          int
	}{
		{3, 0, 500, 3},
		{3, 3, 500, 0},
		{1, 4, 500, -3},
		{5000, 0, 500, 500},
		{0, 1000, 500, -500},
	}
	for _, tt := range tests {
		if got := replicaDiff(tt.want, tt.active, tt.burst); got != tt.diff {
			t.Errorf("replicaDiff(%d, %d, %d) = %d, want %d", tt.want, tt.active, tt.burst, got, tt.diff)
		}
	}
}

// pod builds a pod for ranking tests.
type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func created(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}} }
}
func labelled(k, v string) podOpt  { return func(p *corev1.Pod) { setMap(&p.Labels, k, v) } }
func annotated(k, v string) podOpt { return func(p *corev1.Pod) { setMap(&p.Annotations, k, v) } }
func deleting() podOpt             { return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} } }
func ownedBy(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
	}
}

func readyAt(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(d))}}
	}
}

func setMap(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func TestPodsToDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pods []*corev1.Pod
		n    int
		want []string
	}{
		{"unscheduled before scheduled", []*corev1.Pod{mkPod("a", onNode("n1")), mkPod("b")}, 1, []string{"b"}},
		{"pending before unknown before running", []*corev1.Pod{
			mkPod("run", onNode("n"), phase(corev1.PodRunning)), mkPod("unk", onNode("n"), phase(corev1.PodUnknown)), mkPod("pend", onNode("n"), phase(corev1.PodPending)),
		}, 3, []string{"pend", "unk", "run"}},
		{"not ready before ready", []*corev1.Pod{mkPod("ready", onNode("n"), readyAt(0)), mkPod("notready", onNode("n"), phase(corev1.PodRunning))}, 1, []string{"notready"}},
		{"lower deletion cost first", []*corev1.Pod{
			mkPod("expensive", onNode("n"), readyAt(0), annotated(PodDeletionCostAnnotation, "100")),
			mkPod("cheap", onNode("n"), readyAt(0), annotated(PodDeletionCostAnnotation, "-5")),
			mkPod("plain", onNode("n"), readyAt(0)),
		}, 3, []string{"cheap", "plain", "expensive"}},
		{"doubled up first", []*corev1.Pod{
			mkPod("alone", onNode("n1"), readyAt(0)), mkPod("twin1", onNode("n2"), readyAt(0)), mkPod("twin2", onNode("n2"), readyAt(0)),
		}, 1, []string{"twin1"}},
		{"ready more recently first", []*corev1.Pod{mkPod("old", onNode("n1"), readyAt(0)), mkPod("young", onNode("n2"), readyAt(time.Minute))}, 1, []string{"young"}},
		{"more restarts first", []*corev1.Pod{mkPod("calm", onNode("n1"), readyAt(0)), mkPod("crashy", onNode("n2"), readyAt(0), restarts(7))}, 1, []string{"crashy"}},
		{"newer first", []*corev1.Pod{mkPod("older", created(-time.Hour)), mkPod("newer", created(time.Hour)), mkPod("mid")}, 2, []string{"newer", "mid"}},
		{"n larger than the pods", []*corev1.Pod{mkPod("a")}, 3, []string{"a"}},
		{"none", []*corev1.Pod{mkPod("a")}, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := names(podsToDelete(tt.pods, tt.n)); !slices.Equal(got, tt.want) {
				t.Errorf("podsToDelete = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsActive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pod  *corev1.Pod
		want bool
	}{
		{mkPod("p"), true},
		{mkPod("p", phase(corev1.PodRunning)), true},
		{mkPod("p", phase(corev1.PodSucceeded)), false},
		{mkPod("p", phase(corev1.PodFailed)), false},
		{mkPod("p", deleting()), false},
	}
	for i, tt := range tests {
		if got := isActive(tt.pod); got != tt.want {
			t.Errorf("%d: isActive = %v, want %v", i, got, tt.want)
		}
	}
}

func TestNewPod(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 3, map[string]string{"app": "web"})
	rs.Spec.Template.Annotations = map[string]string{"a": "b"}
	p := newPod(rs)
	if p.GenerateName != "web-" || p.Name != "" || p.Namespace != "ns" {
		t.Errorf("name: generateName %q name %q namespace %q", p.GenerateName, p.Name, p.Namespace)
	}
	if p.Labels["app"] != "web" || p.Annotations["a"] != "b" || p.Spec.Containers[0].Image != "img:1" {
		t.Errorf("template not copied: %+v", p)
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference %+v", p.OwnerReferences)
	}
	p.Labels["app"] = "changed"
	if rs.Spec.Template.Labels["app"] != "web" {
		t.Error("newPod shares the template's labels")
	}
}
