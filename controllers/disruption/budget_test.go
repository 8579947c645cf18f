package disruption

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// pod makes a pod owned by the ReplicaSet with UID owner ("" for none).
func pod(name string, ready bool, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	if owner != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: &yes}}
	}
	return p
}

func deleting(p *corev1.Pod) *corev1.Pod {
	t := metav1.NewTime(now)
	p.DeletionTimestamp = &t
	return p
}

// scales maps a ReplicaSet UID to the scale of its controller.
type scales map[types.UID]Scale

func (s scales) find(_ string, ref *metav1.OwnerReference) (Scale, bool, error) {
	if ref.UID == "broken" {
		return Scale{}, false, errors.New("cache broken")
	}
	sc, ok := s[ref.UID]
	return sc, ok, nil
}

func budget(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
}

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestCompute(t *testing.T) {
	t.Parallel()
	three := scales{"rs": {UID: "deploy", Replicas: 3}, "rs-old": {UID: "deploy", Replicas: 3}, "ss": {UID: "ss", Replicas: 2}}
	recent := metav1.NewTime(now.Add(-time.Minute))
	old := metav1.NewTime(now.Add(-3 * time.Minute))
	tests := []struct {
		name      string
		pdb       *policyv1.PodDisruptionBudget
		disrupted map[string]metav1.Time
		pods      []*corev1.Pod
		// expected, desired, healthy, allowed
		want      [4]int32
		wantKept  []string
		wantRetry time.Time
		unmanaged int
		wantErr   bool
	}{
		{name: "minAvailable 2 of 3 ready", pdb: budget(ptr(intstr.FromInt32(2)), nil),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs")}, want: [4]int32{3, 2, 3, 1}},
		{name: "minAvailable 2, one unready", pdb: budget(ptr(intstr.FromInt32(2)), nil),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", false, "rs"), pod("c", true, "rs")}, want: [4]int32{3, 2, 2, 0}},
		{name: "minAvailable counts pods, not controllers", pdb: budget(ptr(intstr.FromInt32(1)), nil),
			pods: []*corev1.Pod{pod("a", true, ""), pod("b", true, "")}, want: [4]int32{2, 1, 2, 1}},
		{name: "no pods allows nothing", pdb: budget(ptr(intstr.FromInt32(0)), nil), want: [4]int32{0, 0, 0, 0}},
		{name: "deleting pods are not healthy", pdb: budget(ptr(intstr.FromInt32(1)), nil),
			pods: []*corev1.Pod{pod("a", true, "rs"), deleting(pod("b", true, "rs"))}, want: [4]int32{2, 1, 1, 0}},
		{name: "minAvailable percent uses the controller's scale", pdb: budget(ptr(intstr.FromString("50%")), nil),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs")}, want: [4]int32{3, 2, 3, 1}},
		{name: "percent rounds up", pdb: budget(ptr(intstr.FromString("34%")), nil),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs")}, want: [4]int32{3, 2, 2, 0}},
		{name: "two ReplicaSets of one Deployment count once", pdb: budget(nil, ptr(intstr.FromInt32(1))),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs-old"), pod("c", true, "rs")}, want: [4]int32{3, 2, 3, 1}},
		{name: "maxUnavailable 0", pdb: budget(nil, ptr(intstr.FromInt32(0))),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs")}, want: [4]int32{3, 3, 3, 0}},
		{name: "maxUnavailable of two controllers", pdb: budget(nil, ptr(intstr.FromString("20%"))),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs"), pod("d", true, "ss"), pod("e", true, "ss")},
			want: [4]int32{5, 4, 5, 1}},
		{name: "maxUnavailable beyond expected", pdb: budget(nil, ptr(intstr.FromInt32(9))),
			pods: []*corev1.Pod{pod("a", true, "rs")}, want: [4]int32{3, 0, 1, 1}},
		{name: "unmanaged pods are left out of a percentage", pdb: budget(nil, ptr(intstr.FromInt32(1))),
			pods: []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs"), pod("x", true, "")},
			want: [4]int32{3, 2, 4, 2}, unmanaged: 1},
		{name: "unknown controller fails", pdb: budget(nil, ptr(intstr.FromInt32(1))),
			pods: []*corev1.Pod{pod("a", true, "gone")}, wantErr: true},
		{name: "cache error fails", pdb: budget(ptr(intstr.FromString("50%")), nil),
			pods: []*corev1.Pod{pod("a", true, "broken")}, wantErr: true},
		{name: "recent evictions are not healthy and recheck when they expire", pdb: budget(ptr(intstr.FromInt32(2)), nil),
			disrupted: map[string]metav1.Time{"a": recent, "gone": recent},
			pods:      []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs")},
			want:      [4]int32{3, 2, 2, 0}, wantKept: []string{"a"}, wantRetry: recent.Add(DeletionTimeout)},
		{name: "evictions older than two minutes expire", pdb: budget(ptr(intstr.FromInt32(2)), nil),
			disrupted: map[string]metav1.Time{"a": old},
			pods:      []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs")}, want: [4]int32{3, 2, 3, 1}},
		{name: "evicted pods being deleted leave the map", pdb: budget(ptr(intstr.FromInt32(1)), nil),
			disrupted: map[string]metav1.Time{"a": recent},
			pods:      []*corev1.Pod{deleting(pod("a", true, "rs")), pod("b", true, "rs"), pod("c", true, "rs")}, want: [4]int32{3, 1, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.pdb.Status.DisruptedPods = tt.disrupted
			res, err := Compute(tt.pdb, tt.pods, three.find, now)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			st := res.Status
			got := [4]int32{st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy, st.DisruptionsAllowed}
			if got != tt.want {
				t.Errorf("expected/desired/healthy/allowed = %v, want %v", got, tt.want)
			}
			if !res.Changed || st.ObservedGeneration != 1 {
				t.Errorf("changed %v, observedGeneration %d", res.Changed, st.ObservedGeneration)
			}
			if len(st.DisruptedPods) != len(tt.wantKept) {
				t.Errorf("disruptedPods = %v, want %v", st.DisruptedPods, tt.wantKept)
			}
			for _, k := range tt.wantKept {
				if _, ok := st.DisruptedPods[k]; !ok {
					t.Errorf("disruptedPods lacks %s", k)
				}
			}
			if !res.Recheck.Equal(tt.wantRetry) {
				t.Errorf("recheck %v, want %v", res.Recheck, tt.wantRetry)
			}
			if len(res.Unmanaged) != tt.unmanaged {
				t.Errorf("unmanaged %v, want %d", res.Unmanaged, tt.unmanaged)
			}
			c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			wantStatus, wantReason := metav1.ConditionFalse, policyv1.InsufficientPodsReason
			if st.DisruptionsAllowed > 0 {
				wantStatus, wantReason = metav1.ConditionTrue, policyv1.SufficientPodsReason
			}
			if c == nil || c.Status != wantStatus || c.Reason != wantReason || c.ObservedGeneration != 1 {
				t.Errorf("condition %+v, want %s %s", c, wantStatus, wantReason)
			}
		})
	}
}

// TestComputeSteady: a status computed once is not changed by computing
// it again, so the controller does not write when nothing moved.
func TestComputeSteady(t *testing.T) {
	t.Parallel()
	pdb := budget(ptr(intstr.FromInt32(2)), nil)
	pods := []*corev1.Pod{pod("a", true, "rs"), pod("b", true, "rs"), pod("c", true, "rs")}
	find := scales{}.find
	first, err := Compute(pdb, pods, find, now)
	if err != nil || !first.Changed {
		t.Fatalf("first: %+v %v", first, err)
	}
	pdb.Status = first.Status
	second, err := Compute(pdb, pods, find, now.Add(time.Hour))
	if err != nil || second.Changed {
		t.Fatalf("second: changed %v, %v", second.Changed, err)
	}
	// A new generation is observed.
	pdb.Generation = 2
	third, err := Compute(pdb, pods, find, now)
	if err != nil || !third.Changed || third.Status.ObservedGeneration != 2 {
		t.Fatalf("third: %+v %v", third, err)
	}
	// One pod fewer flips the condition, with a new transition time.
	pdb.Status = third.Status
	fourth, err := Compute(pdb, pods[:2], find, now.Add(time.Hour))
	if err != nil || !fourth.Changed || fourth.Status.DisruptionsAllowed != 0 {
		t.Fatalf("fourth: %+v %v", fourth, err)
	}
	c := apimeta.FindStatusCondition(fourth.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Time.Equal(now.Add(time.Hour)) {
		t.Fatalf("condition %+v", c)
	}
}

func TestFailSafe(t *testing.T) {
	t.Parallel()
	pdb := budget(ptr(intstr.FromInt32(1)), nil)
	pdb.Status.DisruptionsAllowed = 4
	st := FailSafe(pdb, fmt.Errorf("found no controllers for pod %q", "a"), now)
	c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
	if st.DisruptionsAllowed != 0 || c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason || c.Message != `found no controllers for pod "a"` {
		t.Fatalf("fail-safe status %+v", st)
	}
	if pdb.Status.DisruptionsAllowed != 4 {
		t.Fatal("FailSafe changed its input")
	}
}
