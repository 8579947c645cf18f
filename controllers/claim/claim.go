// Package claim is the controller-ref logic the workload controllers share
// (upstream's ControllerRefManager): it sorts the objects an owner could
// claim — those it controls and the orphans it selects — into the ones it
// keeps, the orphans it adopts and those it controls but no longer
// selects, which it releases; it builds the owner-reference patches for
// adopting and releasing; it checks with the API server that an owner may
// adopt; and Apply makes those writes.
//
// It is generic over the owned type (pods for the ReplicaSet, DaemonSet,
// Job and StatefulSet controllers, ReplicaSets for the Deployment
// controller). What to read and how to write stays with each controller.
package claim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Object is a claimable object: a pointer to an API object.
type Object interface {
	comparable
	metav1.Object
}

// Plan is an owner's candidates sorted by what to do with them.
type Plan[T Object] struct {
	// Owned are controlled by the owner and selected: kept as they are.
	Owned []T
	// Adopt are orphans the owner selects: it becomes their controller.
	Adopt []T
	// Release are controlled by the owner but no longer selected.
	Release []T
}

// Sort decides ownership as upstream's controller-ref manager does:
// candidates outside owner's namespace or controlled by someone else are
// never touched; an owner being deleted neither adopts nor releases; an
// object being deleted is not adopted. matches says whether the owner
// selects a candidate (see Selects).
func Sort[T Object](owner metav1.Object, matches func(T) bool, candidates []T) Plan[T] {
	var p Plan[T]
	deleting := owner.GetDeletionTimestamp() != nil
	for _, c := range candidates {
		if c.GetNamespace() != owner.GetNamespace() {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(c)
		switch {
		case ref != nil && ref.UID != owner.GetUID():
			// Someone else's.
		case ref != nil && matches(c):
			p.Owned = append(p.Owned, c)
		case ref != nil:
			if !deleting {
				p.Release = append(p.Release, c)
			}
		case !deleting && c.GetDeletionTimestamp() == nil && matches(c):
			p.Adopt = append(p.Adopt, c)
		}
	}
	return p
}

// Selects is the usual matches for Sort: sel is not empty (an empty
// selector claims nothing) and matches the object's labels.
func Selects[T Object](sel labels.Selector) func(T) bool {
	return func(o T) bool { return !sel.Empty() && sel.Matches(labels.Set(o.GetLabels())) }
}
