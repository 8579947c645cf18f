package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func withCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason string, updated time.Time) depOpt {
	return func(d *appsv1.Deployment) {
		ts := metav1.NewTime(updated)
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, LastUpdateTime: ts, LastTransitionTime: ts})
	}
}

func withStatus(replicas, updated, available int32) depOpt {
	return func(d *appsv1.Deployment) {
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = replicas, updated, available, available
		d.Status.ObservedGeneration = d.Generation
	}
}

func TestCalculateStatus(t *testing.T) {
	t.Parallel()
	d := mkDeployment(10, "img:2") // maxUnavailable 1
	d.Generation = 3
	newRS := mkRS(d, "n", "img:2", "2", 4, status(4, 1))
	old := mkRS(d, "o", "img:1", "1", 7, status(8, 7))
	st := calculateStatus(d, []*appsv1.ReplicaSet{old, newRS}, newRS, t0)
	if st.Replicas != 12 || st.UpdatedReplicas != 4 || st.ReadyReplicas != 8 || st.AvailableReplicas != 8 || st.UnavailableReplicas != 3 || st.ObservedGeneration != 3 {
		t.Errorf("status %+v", st)
	}
	if c := getCondition(st, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonMinUnavailable {
		t.Errorf("available %+v", c)
	}
	newRS.Status.AvailableReplicas = 2
	st = calculateStatus(d, []*appsv1.ReplicaSet{old, newRS}, newRS, t0)
	if c := getCondition(st, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != ReasonMinAvailable {
		t.Errorf("available %+v", c)
	}
	if st := calculateStatus(d, nil, nil, t0); st.Replicas != 0 || st.UnavailableReplicas != 0 {
		t.Errorf("no replicasets: %+v", st)
	}
}

func TestRolloutStatus(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Hour)
	deadline := func(s int32) depOpt { return func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = &s } }
	full := func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
		return []*appsv1.ReplicaSet{mkRS(d, "n", "img:2", "2", 3)}
	}
	half := func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
		return []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 2), mkRS(d, "n", "img:2", "2", 2, status(2, 1))}
	}
	tests := []struct {
		name       string
		d          *appsv1.Deployment
		rss        func(*appsv1.Deployment) []*appsv1.ReplicaSet
		reason     string
		status     corev1.ConditionStatus
		updatedNow bool
		requeue    time.Duration
	}{
		{"complete", mkDeployment(3, "img:2", withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, t0)),
			full, ReasonNewRSAvailable, corev1.ConditionTrue, true, 0},
		{"progress renews the deadline", mkDeployment(3, "img:2", withStatus(3, 1, 1), withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated, t0)),
			half, ReasonRSUpdated, corev1.ConditionTrue, true, 600*time.Second + time.Second},
		{"no progress within the deadline", mkDeployment(3, "img:2", withStatus(4, 2, 3), withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, now.Add(-time.Minute))),
			half, ReasonRSUpdated, corev1.ConditionTrue, false, 540*time.Second + time.Second},
		{"no progress past the deadline", mkDeployment(3, "img:2", deadline(30), withStatus(4, 2, 3), withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, now.Add(-time.Minute))),
			half, ReasonTimedOut, corev1.ConditionFalse, true, 0},
		{"already complete stays", mkDeployment(3, "img:2", withStatus(3, 3, 3), withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, t0)),
			full, ReasonNewRSAvailable, corev1.ConditionTrue, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, requeue := rolloutStatus(tt.d, tt.rss(tt.d), tt.rss(tt.d)[len(tt.rss(tt.d))-1], now)
			c := getCondition(st, appsv1.DeploymentProgressing)
			if c == nil || c.Reason != tt.reason || c.Status != tt.status {
				t.Fatalf("progressing %+v, want %s %s", c, tt.status, tt.reason)
			}
			if got := c.LastUpdateTime.Time.Equal(now); got != tt.updatedNow {
				t.Errorf("last update %v (now %v)", c.LastUpdateTime, now)
			}
			if requeue != tt.requeue {
				t.Errorf("requeue %v, want %v", requeue, tt.requeue)
			}
		})
	}
	noDeadline := mkDeployment(3, "img:2", func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = nil },
		withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, t0))
	if st, _ := rolloutStatus(noDeadline, full(noDeadline), nil, now); getCondition(st, appsv1.DeploymentProgressing) != nil {
		t.Error("Progressing kept without a deadline")
	}
}

func TestRolloutStatusReplicaFailure(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:2")
	rs := mkRS(d, "n", "img:2", "1", 3, status(1, 1), func(rs *appsv1.ReplicaSet) {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}
	})
	st, _ := rolloutStatus(d, []*appsv1.ReplicaSet{rs}, rs, t0)
	if c := getCondition(st, appsv1.DeploymentReplicaFailure); c == nil || c.Message != "quota" {
		t.Errorf("replica failure %+v", c)
	}
	d.Status = st
	rs.Status.Conditions = nil
	st, _ = rolloutStatus(d, []*appsv1.ReplicaSet{rs}, rs, t0)
	if c := getCondition(st, appsv1.DeploymentReplicaFailure); c != nil {
		t.Errorf("replica failure kept %+v", c)
	}
}

func TestPausedCondition(t *testing.T) {
	t.Parallel()
	paused := func(d *appsv1.Deployment) { d.Spec.Paused = true }
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		changed bool
		reason  string
	}{
		{"pause", mkDeployment(1, "i", paused, withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, t0)), true, ReasonPaused},
		{"still paused", mkDeployment(1, "i", paused, withCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, t0)), false, ReasonPaused},
		{"resume", mkDeployment(1, "i", withCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, t0)), true, ReasonResumed},
		{"running", mkDeployment(1, "i", withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, t0)), false, ReasonRSUpdated},
	}
	for _, tt := range tests {
		st := *tt.d.Status.DeepCopy()
		changed := pausedCondition(tt.d, &st, t0.Add(time.Hour))
		if c := getCondition(st, appsv1.DeploymentProgressing); changed != tt.changed || c.Reason != tt.reason {
			t.Errorf("%s: changed %v reason %s", tt.name, changed, c.Reason)
		}
	}
}

func TestSetCondition(t *testing.T) {
	t.Parallel()
	st := appsv1.DeploymentStatus{}
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "A", "", t0))
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "A", "", t0.Add(time.Hour)))
	if c := getCondition(st, appsv1.DeploymentAvailable); !c.LastUpdateTime.Time.Equal(t0) || len(st.Conditions) != 1 {
		t.Errorf("same status and reason changed the condition: %+v", st.Conditions)
	}
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "B", "", t0.Add(time.Hour)))
	if c := getCondition(st, appsv1.DeploymentAvailable); c.Reason != "B" || !c.LastTransitionTime.Time.Equal(t0) || !c.LastUpdateTime.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("a new reason: %+v", c)
	}
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "C", "", t0.Add(2*time.Hour)))
	if c := getCondition(st, appsv1.DeploymentAvailable); !c.LastTransitionTime.Time.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("a new status: %+v", c)
	}
}
