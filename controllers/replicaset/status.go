package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/controllers/podwrite"
)

// Event reasons.
const (
	ReasonSuccessfulCreate = podwrite.ReasonSuccessfulCreate
	ReasonFailedCreate     = podwrite.ReasonFailedCreate
	ReasonSuccessfulDelete = podwrite.ReasonSuccessfulDelete
	ReasonFailedDelete     = podwrite.ReasonFailedDelete
)

// calculateStatus is rs's status given its active pods; manageErr is the
// failure, if any, of this sync's creations or deletions. It also returns
// how long until the next ready pod becomes available (0: none pending), so
// the caller can sync again then.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) (appsv1.ReplicaSetStatus, time.Duration) {
	st := *rs.Status.DeepCopy()
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = 0, 0, 0
	st.ObservedGeneration = rs.Generation
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var next time.Duration
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		at, ready := availableAt(p, rs.Spec.MinReadySeconds)
		if !ready {
			continue
		}
		st.ReadyReplicas++
		if wait := at.Sub(now); wait <= 0 {
			st.AvailableReplicas++
		} else if next == 0 || wait < next {
			next = wait
		}
	}
	failure := failureCondition(st.Conditions)
	switch {
	case manageErr != nil && failure == nil:
		reason := ReasonFailedCreate
		if int32(len(pods)) > specReplicas(rs) {
			reason = ReasonFailedDelete
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		st.Conditions = removeFailure(st.Conditions)
	}
	return st, next
}

func failureCondition(cs []appsv1.ReplicaSetCondition) *appsv1.ReplicaSetCondition {
	for i := range cs {
		if cs[i].Type == appsv1.ReplicaSetReplicaFailure {
			return &cs[i]
		}
	}
	return nil
}

func removeFailure(cs []appsv1.ReplicaSetCondition) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range cs {
		if c.Type != appsv1.ReplicaSetReplicaFailure {
			out = append(out, c)
		}
	}
	return out
}

// statusChanged reports whether st differs from what rs reports.
func statusChanged(rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) bool {
	return !apiequality.Semantic.DeepEqual(rs.Status, st)
}
