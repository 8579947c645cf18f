package statefulset

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/controllers/history"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testSet(replicas int32, change ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web", Generation: 2},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         "nginx",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32(0))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}}}},
		},
	}
	for _, c := range change {
		c(s)
	}
	return s
}

// podState is how a test pod looks: "ready", "running" (not ready),
// "pending", "failed", "terminating" (ready, being deleted).
func testPod(set *appsv1.StatefulSet, ordinal int, rev, st string) *corev1.Pod {
	p := newPod(set, ordinal, rev)
	p.UID = types.UID(fmt.Sprintf("uid-%s-%d", rev, ordinal))
	p.Status.Phase = corev1.PodRunning
	ready := corev1.ConditionTrue
	switch st {
	case "running":
		ready = corev1.ConditionFalse
	case "pending":
		p.Status.Phase = corev1.PodPending
		ready = corev1.ConditionFalse
	case "failed":
		p.Status.Phase = corev1.PodFailed
		ready = corev1.ConditionFalse
	case "terminating":
		p.DeletionTimestamp = &metav1.Time{Time: now}
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	return p
}

func testState(set *appsv1.StatefulSet, pods ...*corev1.Pod) state {
	cur, upd := set.DeepCopy(), set.DeepCopy()
	upd.Spec.Template.Spec.Containers[0].Image = "busybox:new"
	return state{set: set, current: "r1", update: "r2", currentSet: cur, updateSet: upd, pods: pods,
		claims: map[string]*corev1.PersistentVolumeClaim{}, now: now}
}

// same makes the update revision the current one.
func same(s state) state {
	s.update, s.updateSet = s.current, s.currentSet
	return s
}

func withClaims(s state, ordinals ...int) state {
	for _, o := range ordinals {
		for _, c := range claimsFor(s.set, o) {
			c.UID = types.UID("claim-" + c.Name)
			s.claims[c.Name] = c
		}
	}
	return s
}

// summary renders a plan's actions as "create web-0[data-web-0]", "delete web-2".
func summary(pl plan) string {
	var out []string
	for _, a := range pl.actions {
		s := a.kind.String() + " " + a.pod.Name
		if len(a.claims) > 0 {
			var names []string
			for _, c := range a.claims {
				names = append(names, c.Name)
			}
			s += "[" + strings.Join(names, ",") + "]"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestMakePlan(t *testing.T) {
	t.Parallel()
	parallel := func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
	set3 := testSet(3)
	for _, tc := range []struct {
		name  string
		state state
		want  string
	}{
		{"fresh set creates ordinal 0 with its claim", same(testState(set3)), "create web-0[data-web-0]"},
		{"waits for web-0 to be ready", same(withClaims(testState(set3, testPod(set3, 0, "r1", "running")), 0)), ""},
		{"then creates web-1", same(withClaims(testState(set3, testPod(set3, 0, "r1", "ready")), 0)), "create web-1[data-web-1]"},
		{"an existing claim is reused", same(withClaims(testState(set3, testPod(set3, 0, "r1", "ready")), 0, 1)), "create web-1"},
		{"a pending pod gets its missing claim", same(testState(set3, testPod(set3, 0, "r1", "pending"))), "create claims web-0[data-web-0]"},
		{"a gap is filled first", same(withClaims(testState(set3, testPod(set3, 0, "r1", "ready"), testPod(set3, 2, "r1", "ready")), 0, 1, 2)), "create web-1"},
		{"parallel creates all", same(testState(testSet(3, parallel))), "create web-0[data-web-0]; create web-1[data-web-1]; create web-2[data-web-2]"},
		{"scale down deletes the highest ordinal only",
			same(withClaims(testState(testSet(1), testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r1", "ready")), 0, 1, 2)),
			"delete web-2"},
		{"scale down waits for a terminating pod",
			same(withClaims(testState(testSet(1), testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r1", "terminating")), 0, 1, 2)),
			""},
		{"scale down waits for an unready pod in range",
			same(withClaims(testState(testSet(1), testPod(set3, 0, "r1", "running"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r1", "ready")), 0, 1, 2)),
			""},
		{"scale down takes the first unhealthy pod",
			same(withClaims(testState(testSet(1), testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "running")), 0, 1)),
			"delete web-1"},
		{"parallel scale down deletes all at once",
			same(withClaims(testState(testSet(1, parallel), testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "running"), testPod(set3, 2, "r1", "ready")), 0, 1, 2)),
			"delete web-2; delete web-1"},
		{"a failed pod is deleted", same(withClaims(testState(set3, testPod(set3, 0, "r1", "failed")), 0)), "delete web-0"},
		{"rolling update starts at the top",
			withClaims(testState(set3, testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r1", "ready")), 0, 1, 2),
			"delete web-2"},
		{"rolling update waits for the updated pod",
			withClaims(testState(set3, testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r2", "running")), 0, 1, 2),
			""},
		{"rolling update goes on down",
			withClaims(testState(set3, testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r2", "ready")), 0, 1, 2),
			"delete web-1"},
		{"a deleted pod comes back at the update revision",
			withClaims(testState(set3, testPod(set3, 0, "r1", "ready"), testPod(set3, 2, "r2", "ready")), 0, 1, 2),
			"create web-1"},
		{"partition stops the update",
			withClaims(testState(testSet(3, func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = new(int32(2)) }),
				testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r2", "ready")), 0, 1, 2),
			""},
		{"maxUnavailable 2 deletes two",
			withClaims(testState(testSet(3, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = new(intstr.FromInt32(2))
			}),
				testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r1", "ready")), 0, 1, 2),
			"delete web-2; delete web-1"},
		{"maxUnavailable counts unavailable pods",
			withClaims(testState(testSet(3, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = new(intstr.FromString("67%"))
				s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			}), testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r2", "running")), 0, 1, 2),
			"delete web-1"},
		{"OnDelete leaves old pods",
			withClaims(testState(testSet(3, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			}), testPod(set3, 0, "r1", "ready"), testPod(set3, 1, "r1", "ready"), testPod(set3, 2, "r1", "ready")), 0, 1, 2),
			""},
		{"a set being deleted does nothing",
			same(testState(testSet(3, func(s *appsv1.StatefulSet) { s.DeletionTimestamp = &metav1.Time{Time: now} }))), ""},
		{"drifted identity labels are fixed",
			same(withClaims(testState(set3, func() *corev1.Pod {
				p := testPod(set3, 0, "r1", "ready")
				delete(p.Labels, appsv1.PodIndexLabel)
				return p
			}()), 0, 1)), "update web-0; create web-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := summary(makePlan(tc.state)); got != tc.want {
				t.Fatalf("plan = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewPodIdentity(t *testing.T) {
	t.Parallel()
	set := testSet(3)
	st := same(testState(set))
	pl := makePlan(st)
	if len(pl.actions) != 1 {
		t.Fatalf("actions = %s", summary(pl))
	}
	p := pl.actions[0].pod
	if p.Name != "web-0" || p.Namespace != "ns" || p.Spec.Hostname != "web-0" || p.Spec.Subdomain != "nginx" {
		t.Fatalf("identity = %s/%s host %s sub %s", p.Namespace, p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	for k, v := range map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-0", appsv1.PodIndexLabel: "0", history.ControllerRevisionHashLabel: "r1"} {
		if p.Labels[k] != v {
			t.Fatalf("label %s = %q, want %q (labels %v)", k, p.Labels[k], v, p.Labels)
		}
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != set.UID || ref.Kind != "StatefulSet" {
		t.Fatalf("controller = %+v", ref)
	}
	if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[0].Name != "data" || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-0" || p.Spec.Volumes[1].Name != "tmp" {
		t.Fatalf("volumes = %+v", p.Spec.Volumes)
	}
	c := pl.actions[0].claims[0]
	if c.Name != "data-web-0" || c.Namespace != "ns" || c.Labels["app"] != "web" || c.Labels["tier"] != "db" || len(c.OwnerReferences) != 0 {
		t.Fatalf("claim = %+v", c.ObjectMeta)
	}
	if !identityMatches(set, p) || !storageMatches(set, p) {
		t.Fatal("a new pod does not match its own identity")
	}
	// The template is not shared with the pod.
	p.Labels["x"] = "y"
	if _, ok := set.Spec.Template.Labels["x"]; ok {
		t.Fatal("the pod shares the template's labels")
	}
}

func TestVersionedPods(t *testing.T) {
	t.Parallel()
	// Below the partition, a recreated pod is at the current revision.
	set := testSet(3, func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = new(int32(2)) })
	st := withClaims(testState(set), 0, 1, 2)
	st.currentSet = set
	st.set = set
	st.updateSet = set.DeepCopy()
	st.updateSet.Spec.UpdateStrategy.RollingUpdate.Partition = new(int32(2))
	st.set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	pl := makePlan(st)
	var revs []string
	for _, a := range pl.actions {
		revs = append(revs, a.pod.Name+"@"+podRevision(a.pod))
	}
	if want := []string{"web-0@r1", "web-1@r1", "web-2@r2"}; !slices.Equal(revs, want) {
		t.Fatalf("pods = %v, want %v", revs, want)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	set := testSet(3, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 120 })
	st := withClaims(testState(set,
		testPod(set, 0, "r1", "ready"), testPod(set, 1, "r1", "running"), testPod(set, 2, "r2", "ready"), testPod(set, 3, "r1", "terminating")), 0, 1, 2, 3)
	fresh := testPod(set, 0, "r1", "ready")
	fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-4 * time.Minute))
	st.pods[0] = fresh
	pl := makePlan(st)
	got := pl.status
	if got.Replicas != 4 || got.ReadyReplicas != 3 || got.AvailableReplicas != 1 || got.CurrentReplicas != 2 || got.UpdatedReplicas != 1 ||
		got.CurrentRevision != "r1" || got.UpdateRevision != "r2" || got.ObservedGeneration != 2 {
		t.Fatalf("status = %+v", got)
	}
	// web-2 and web-3 became ready a minute ago: available in another minute.
	if pl.requeueAfter != time.Minute {
		t.Fatalf("requeueAfter = %v", pl.requeueAfter)
	}

	done := same(withClaims(testState(testSet(2), testPod(set, 0, "r1", "ready"), testPod(set, 1, "r1", "ready")), 0, 1))
	done.update, done.updateSet = "r2", done.currentSet
	done.pods[0].Labels[history.ControllerRevisionHashLabel] = "r2"
	done.pods[1].Labels[history.ControllerRevisionHashLabel] = "r2"
	if s := makePlan(done).status; s.CurrentRevision != "r2" || s.CurrentReplicas != 2 || s.UpdatedReplicas != 2 {
		t.Fatalf("a finished rolling update is not completed: %+v", s)
	}
}

func TestClaimBlocks(t *testing.T) {
	t.Parallel()
	set := testSet(1)
	st := same(withClaims(testState(set), 0))
	st.claims["data-web-0"].DeletionTimestamp = &metav1.Time{Time: now}
	pl := makePlan(st)
	if len(pl.actions) != 0 || pl.requeueAfter != claimRetry {
		t.Fatalf("plan = %q requeue %v", summary(pl), pl.requeueAfter)
	}
}

func TestRetentionPolicy(t *testing.T) {
	t.Parallel()
	policy := func(deleted, scaled appsv1.PersistentVolumeClaimRetentionPolicyType) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: deleted, WhenScaled: scaled}
		}
	}
	const retain, del = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	owners := func(c *corev1.PersistentVolumeClaim) string {
		var out []string
		for _, r := range c.OwnerReferences {
			out = append(out, r.Kind+"/"+r.Name)
		}
		return strings.Join(out, ",")
	}

	// WhenDeleted Delete: a new claim is owned by the set.
	set := testSet(1, policy(del, retain))
	pl := makePlan(same(testState(set)))
	if got := owners(pl.actions[0].claims[0]); got != "StatefulSet/web" {
		t.Fatalf("new claim owners = %q", got)
	}
	// WhenScaled Delete: the claim of a scaled-down pod is handed to the
	// pod before the pod is deleted; the claim of a pod in range is not.
	set = testSet(1, policy(retain, del))
	st := same(withClaims(testState(set, testPod(set, 0, "r1", "ready"), testPod(set, 1, "r1", "ready")), 0, 1))
	pl = makePlan(st)
	if got := summary(pl); got != "update claims web-1[data-web-1]; delete web-1" {
		t.Fatalf("plan = %q", got)
	}
	if got := owners(pl.actions[0].claims[0]); got != "Pod/web-1" {
		t.Fatalf("scaled-down claim owners = %q", got)
	}
	// Both Delete, claims created under Retain: the set takes them over.
	set = testSet(1, policy(del, del))
	pl = makePlan(same(withClaims(testState(set, testPod(set, 0, "r1", "ready")), 0)))
	if got := summary(pl); got != "update claims web-0[data-web-0]" || owners(pl.actions[0].claims[0]) != "StatefulSet/web" {
		t.Fatalf("plan = %q", got)
	}
	// A claim still owned by an earlier web-0 blocks the new one.
	set = testSet(1, policy(retain, del))
	st = same(withClaims(testState(set), 0))
	st.claims["data-web-0"].OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "old"}}
	if pl := makePlan(st); len(pl.actions) != 0 || pl.requeueAfter == 0 {
		t.Fatalf("stale claim: plan = %q", summary(pl))
	}
}

func TestRevisionSteps(t *testing.T) {
	t.Parallel()
	set := testSet(1)
	var cc int32
	mk := func(image string, n int64) *appsv1.ControllerRevision {
		s := set.DeepCopy()
		s.Spec.Template.Spec.Containers[0].Image = image
		r, err := newRevision(s, n, &cc)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := mk("a", 1), mk("b", 2)
	revs := []*appsv1.ControllerRevision{a, b}
	if step, got := updateRevisionStep(revs, mk("b", 3)); step != revisionKeep || got != b {
		t.Fatalf("same template: %v %v", step, got)
	}
	if step, got := updateRevisionStep(revs, mk("a", 3)); step != revisionRenumber || got != a {
		t.Fatalf("rollback: %v %v", step, got)
	}
	if step, _ := updateRevisionStep(revs, mk("c", 3)); step != revisionCreate {
		t.Fatalf("new template: %v", step)
	}
	if step, _ := updateRevisionStep(nil, mk("c", 1)); step != revisionCreate {
		t.Fatalf("first template: %v", step)
	}
	// The revision's patch gives back its template.
	back, err := applyRevision(set, a)
	if err != nil || back.Spec.Template.Spec.Containers[0].Image != "a" {
		t.Fatalf("applyRevision = %v, %v", back.Spec.Template.Spec.Containers, err)
	}

	// Pruning keeps the limit, and never a live revision.
	var many []*appsv1.ControllerRevision
	for i := range 6 {
		many = append(many, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i)}, Revision: int64(i)})
	}
	limited := testSet(1, func(s *appsv1.StatefulSet) { s.Spec.RevisionHistoryLimit = new(int32(2)) })
	var names []string
	for _, r := range prunable(limited, many, "r4", "r5", []string{"r0"}) {
		names = append(names, r.Name)
	}
	if want := []string{"r1"}; !slices.Equal(names, want) {
		t.Fatalf("prunable = %v, want %v", names, want)
	}
}
