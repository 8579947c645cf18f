package replicaset

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pure decisions of a sync: how many pods to create or delete, in which
// batches, which pods go first, and what a new pod looks like.

// PodDeletionCostAnnotation ranks pods when scaling down: lower cost goes first.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// isActive reports whether a pod counts toward the replicas: it has not
// finished and is not being deleted.
func isActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func activePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if isActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// replicaDiff returns how many pods to create (positive) or delete
// (negative) to bring active pods to want, at most burst either way.
func replicaDiff(want int32, active, burst int) int {
	return max(-burst, min(burst, int(want)-active))
}

// newPod is a pod built from rs's template, controlled by rs.
func newPod(rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, controllerKind)},
		},
		Spec: t.Spec,
	}
}

// podsToDelete returns the n least valuable pods, in the order they should
// go: unscheduled before scheduled; Pending before Unknown before Running;
// not ready before ready; lower deletion cost first; pods sharing a node
// with more of the set before lone ones; ready for less time first; more
// container restarts first; newer first.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	if n <= 0 {
		return nil
	}
	perNode := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			perNode[p.Spec.NodeName]++
		}
	}
	ranked := slices.Clone(pods)
	slices.SortStableFunc(ranked, func(a, b *corev1.Pod) int { return compareValue(a, b, perNode) })
	return ranked[:min(n, len(ranked))]
}

// compareValue orders a before b (negative) when a is less valuable.
func compareValue(a, b *corev1.Pod, perNode map[string]int) int {
	if c := cmp.Compare(boolRank(a.Spec.NodeName != ""), boolRank(b.Spec.NodeName != "")); c != 0 {
		return c
	}
	if c := cmp.Compare(phaseRank(a.Status.Phase), phaseRank(b.Status.Phase)); c != 0 {
		return c
	}
	ra, rb := readySince(a), readySince(b)
	if c := cmp.Compare(boolRank(ra != nil), boolRank(rb != nil)); c != 0 {
		return c
	}
	if c := cmp.Compare(deletionCost(a), deletionCost(b)); c != 0 {
		return c
	}
	// More pods of the set on a's node: a goes first.
	if c := cmp.Compare(perNode[b.Spec.NodeName], perNode[a.Spec.NodeName]); c != 0 && a.Spec.NodeName != "" && b.Spec.NodeName != "" {
		return c
	}
	if ra != nil && rb != nil && !ra.Equal(*rb) {
		// Ready more recently: less valuable.
		return ra.Compare(*rb) * -1
	}
	if c := cmp.Compare(maxRestarts(b), maxRestarts(a)); c != 0 {
		return c
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		return newerFirst(ta, tb)
	}
	return cmp.Compare(a.Name, b.Name)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0 // Pending, or not reported yet
}

// newerFirst orders the later time first; a zero time counts as the newest.
func newerFirst(a, b time.Time) int {
	switch {
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	}
	return b.Compare(a)
}

func deletionCost(p *corev1.Pod) int64 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return n
}

func maxRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

// readyCondition returns the pod's Ready condition, or nil.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// readySince returns when a ready pod became ready (nil when not ready).
func readySince(p *corev1.Pod) *time.Time {
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return nil
	}
	t := c.LastTransitionTime.Time
	return &t
}

// availableAt returns when a pod is or becomes available (ready for
// minReadySeconds), and false when it is not ready.
func availableAt(p *corev1.Pod, minReadySeconds int32) (time.Time, bool) {
	since := readySince(p)
	if since == nil {
		return time.Time{}, false
	}
	if minReadySeconds <= 0 {
		return time.Time{}, true
	}
	return since.Add(time.Duration(minReadySeconds) * time.Second), true
}

// specReplicas is spec.replicas, 1 when unset (the API server defaults it).
func specReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}
