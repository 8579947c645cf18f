package node

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseDurationSeconds is the node lease's duration.
const LeaseDurationSeconds = 40

// Lease returns the node's lease renewed at now: a new one when cur is
// nil, owned by the node when its UID is known.
func Lease(node *corev1.Node, cur *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if cur == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: corev1.NamespaceNodeLease}}
	} else {
		l = cur.DeepCopy()
	}
	holder, dur := node.Name, int32(LeaseDurationSeconds)
	t := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &dur, &t
	if len(l.OwnerReferences) == 0 && node.UID != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	}
	return l
}
