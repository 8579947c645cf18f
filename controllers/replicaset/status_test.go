package replicaset

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCalculateStatus(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 3, map[string]string{"app": "web"})
	rs.Spec.Template.Labels["tier"] = "front"
	rs.Generation = 4
	slow := rs.DeepCopy()
	slow.Spec.MinReadySeconds = 10
	failing := rs.DeepCopy()
	failing.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: ReasonFailedCreate}}

	full := func(name string, opts ...podOpt) *corev1.Pod {
		return mkPod(name, append([]podOpt{labelled("app", "web"), labelled("tier", "front")}, opts...)...)
	}
	now := t0.Add(time.Minute)
	pods := []*corev1.Pod{
		full("ready-long-ago", readyAt(0)),
		full("ready-just-now", readyAt(time.Minute-4*time.Second)),
		full("not-ready", phase(corev1.PodRunning)),
		mkPod("partly-labelled", labelled("app", "web"), readyAt(0)),
	}
	tests := []struct {
		name                              string
		rs                                *appsv1.ReplicaSet
		pods                              []*corev1.Pod
		err                               error
		replicas, fully, ready, available int32
		next                              time.Duration
		failure                           bool
	}{
		{"no pods", rs, nil, nil, 0, 0, 0, 0, 0, false},
		{"counts", rs, pods, nil, 4, 3, 3, 3, 0, false},
		{"minReadySeconds", slow, pods, nil, 4, 3, 3, 2, 6 * time.Second, false},
		{"failure adds the condition", rs, pods[:1], errors.New("quota"), 1, 1, 1, 1, 0, true},
		{"success clears it", failing, pods[:1], nil, 1, 1, 1, 1, 0, false},
		{"a failure keeps it", failing, pods[:1], errors.New("quota"), 1, 1, 1, 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, next := calculateStatus(tt.rs, tt.pods, tt.err, now)
			if st.Replicas != tt.replicas || st.FullyLabeledReplicas != tt.fully || st.ReadyReplicas != tt.ready || st.AvailableReplicas != tt.available {
				t.Errorf("status %d/%d/%d/%d, want %d/%d/%d/%d", st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas,
					tt.replicas, tt.fully, tt.ready, tt.available)
			}
			if st.ObservedGeneration != 4 {
				t.Errorf("observedGeneration %d", st.ObservedGeneration)
			}
			if next != tt.next {
				t.Errorf("next = %v, want %v", next, tt.next)
			}
			if got := failureCondition(st.Conditions) != nil; got != tt.failure {
				t.Errorf("ReplicaFailure present = %v, want %v", got, tt.failure)
			}
		})
	}
}

func TestStatusChangedIgnoresNothingButEquality(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 1, map[string]string{"app": "web"})
	st, _ := calculateStatus(rs, nil, nil, t0)
	rs.Status = st
	if statusChanged(rs, st) {
		t.Error("same status reported as changed")
	}
	st.ReadyReplicas++
	if !statusChanged(rs, st) {
		t.Error("changed status reported as same")
	}
	rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: "X", LastTransitionTime: metav1.NewTime(t0)}}
	if !statusChanged(rs, st) {
		t.Error("conditions ignored")
	}
}
