package garbagecollector

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The finalizers the API server adds for the Orphan and Foreground policies.
const (
	FinalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
	FinalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
)

// ownerState is what a lookup found about the owner an ownerReference names.
type ownerState int

const (
	// ownerPresent: the owner exists and is not waiting for its dependents'
	// deletion (an owner that cannot be looked up counts as present).
	ownerPresent ownerState = iota
	// ownerAbsent: no object has the owner's name, or another one (another
	// UID) has; the reference dangles.
	ownerAbsent
	// ownerWaiting: the owner is being deleted with the foregroundDeletion
	// finalizer and waits for its dependents to go.
	ownerWaiting
)

func (s ownerState) String() string {
	switch s {
	case ownerPresent:
		return "present"
	case ownerAbsent:
		return "absent"
	case ownerWaiting:
		return "waiting"
	}
	return fmt.Sprintf("ownerState(%d)", int(s))
}

// ownerCheck is one ownerReference with what is known about its owner.
type ownerCheck struct {
	ref   metav1.OwnerReference
	state ownerState
}

// dependentPlan is what to do with an object because of its owners. At most
// one of RemoveRefs and Delete is set.
type dependentPlan struct {
	// RemoveRefs are owners whose references to drop: the object keeps a
	// present owner, so it stays.
	RemoveRefs []types.UID
	// Delete deletes the object with Policy, after setting
	// blockOwnerDeletion=false on its references to the Unblock owners.
	Delete  bool
	Policy  metav1.DeletionPropagation
	Unblock []types.UID
}

// planDependent decides what an object's owners mean for it. deps are the
// object's own dependents. It follows upstream's rules:
//   - an object being deleted is left to its own finalizers;
//   - with a present owner the object stays, and references to absent or
//     waiting owners are dropped;
//   - otherwise (every owner absent or waiting) the object is deleted: in
//     the foreground when an owner waits and the object has dependents of
//     its own (so the owner waits for the whole subtree), else by its own
//     GC finalizer's policy, else in the background. If one of its
//     dependents is itself deleting in the foreground, its references to
//     the waiting owners stop blocking first, which breaks cycles.
func planDependent(obj *metav1.PartialObjectMetadata, owners []ownerCheck, deps []Dependent) dependentPlan {
	if obj.DeletionTimestamp != nil || len(owners) == 0 {
		return dependentPlan{}
	}
	var present int
	var gone, waiting []types.UID
	for _, o := range owners {
		switch o.state {
		case ownerPresent:
			present++
		case ownerAbsent:
			gone = append(gone, o.ref.UID)
		case ownerWaiting:
			waiting = append(waiting, o.ref.UID)
		}
	}
	if present > 0 {
		if len(gone)+len(waiting) == 0 {
			return dependentPlan{}
		}
		return dependentPlan{RemoveRefs: append(gone, waiting...)}
	}
	if len(waiting) > 0 && len(deps) > 0 {
		p := dependentPlan{Delete: true, Policy: metav1.DeletePropagationForeground}
		if slices.ContainsFunc(deps, func(d Dependent) bool { return deletingDependents(d.Object) }) {
			for _, o := range owners {
				if o.state == ownerWaiting && blocks(o.ref) {
					p.Unblock = append(p.Unblock, o.ref.UID)
				}
			}
		}
		return p
	}
	return dependentPlan{Delete: true, Policy: ownPolicy(obj)}
}

// ownPolicy is the propagation an object asks for with a GC finalizer set
// in advance, else Background.
func ownPolicy(obj *metav1.PartialObjectMetadata) metav1.DeletionPropagation {
	switch {
	case slices.Contains(obj.Finalizers, FinalizerOrphan):
		return metav1.DeletePropagationOrphan
	case slices.Contains(obj.Finalizers, FinalizerForeground):
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

// ownerPlan is what to do for an object being deleted with a GC finalizer.
type ownerPlan struct {
	// Orphan are the dependents whose reference to the owner to remove
	// before the orphan finalizer goes.
	Orphan []Dependent
	// Delete are the dependents to queue: their owner now waits, so their
	// Reconcile deletes them (or drops the reference, if another owner
	// remains).
	Delete []types.UID
	// Blocking counts dependents with blockOwnerDeletion=true that still
	// exist (being deleted or not).
	Blocking int
	// RemoveFinalizer is the finalizer to remove now ("" for none). For
	// the orphan finalizer, only after every Orphan dependent is patched.
	RemoveFinalizer string
}

// planOwner decides what an owner's GC finalizer asks for, from the owner
// and its dependents. The orphan finalizer wins over the foreground one.
func planOwner(obj *metav1.PartialObjectMetadata, deps []Dependent) ownerPlan {
	if obj.DeletionTimestamp == nil {
		return ownerPlan{}
	}
	switch {
	case slices.Contains(obj.Finalizers, FinalizerOrphan):
		return ownerPlan{Orphan: deps, RemoveFinalizer: FinalizerOrphan}
	case slices.Contains(obj.Finalizers, FinalizerForeground):
		var p ownerPlan
		for _, d := range deps {
			if d.Object.DeletionTimestamp == nil {
				p.Delete = append(p.Delete, d.Object.UID)
			}
			if ref, ok := refTo(d.Object, obj.UID); ok && blocks(ref) {
				p.Blocking++
			}
		}
		if p.Blocking == 0 {
			p.RemoveFinalizer = FinalizerForeground
		}
		return p
	}
	return ownerPlan{}
}

// deletingDependents: being deleted in the foreground.
func deletingDependents(obj *metav1.PartialObjectMetadata) bool {
	return obj.DeletionTimestamp != nil && slices.Contains(obj.Finalizers, FinalizerForeground)
}

func blocks(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

func refTo(obj *metav1.PartialObjectMetadata, owner types.UID) (metav1.OwnerReference, bool) {
	for _, r := range obj.OwnerReferences {
		if r.UID == owner {
			return r, true
		}
	}
	return metav1.OwnerReference{}, false
}

// A JSON patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// removeRefsPatch returns a JSON patch that removes obj's references to the
// owners, testing first that the object and each reference are still the
// ones read (nil when obj names none of them).
func removeRefsPatch(obj *metav1.PartialObjectMetadata, owners []types.UID) []byte {
	var tests, removes []patchOp
	for i := len(obj.OwnerReferences) - 1; i >= 0; i-- {
		r := obj.OwnerReferences[i]
		if !slices.Contains(owners, r.UID) {
			continue
		}
		path := fmt.Sprintf("/metadata/ownerReferences/%d", i)
		tests = append(tests, patchOp{Op: "test", Path: path + "/uid", Value: string(r.UID)})
		removes = append(removes, patchOp{Op: "remove", Path: path})
	}
	return jsonPatch(obj, tests, removes)
}

// unblockPatch returns a JSON patch that sets blockOwnerDeletion=false on
// obj's blocking references to the owners (nil when there are none).
func unblockPatch(obj *metav1.PartialObjectMetadata, owners []types.UID) []byte {
	var tests, sets []patchOp
	for i, r := range obj.OwnerReferences {
		if !slices.Contains(owners, r.UID) || !blocks(r) {
			continue
		}
		path := fmt.Sprintf("/metadata/ownerReferences/%d", i)
		tests = append(tests, patchOp{Op: "test", Path: path + "/uid", Value: string(r.UID)})
		sets = append(sets, patchOp{Op: "replace", Path: path + "/blockOwnerDeletion", Value: false})
	}
	return jsonPatch(obj, tests, sets)
}

// removeFinalizerPatch returns a JSON patch that removes a finalizer from
// obj (nil when obj does not have it).
func removeFinalizerPatch(obj *metav1.PartialObjectMetadata, finalizer string) []byte {
	var tests, removes []patchOp
	for i := len(obj.Finalizers) - 1; i >= 0; i-- {
		if obj.Finalizers[i] != finalizer {
			continue
		}
		path := fmt.Sprintf("/metadata/finalizers/%d", i)
		tests = append(tests, patchOp{Op: "test", Path: path, Value: finalizer})
		removes = append(removes, patchOp{Op: "remove", Path: path})
	}
	return jsonPatch(obj, tests, removes)
}

// jsonPatch joins a test of the object's UID, the tests and the changes.
func jsonPatch(obj *metav1.PartialObjectMetadata, tests, changes []patchOp) []byte {
	if len(changes) == 0 {
		return nil
	}
	ops := append([]patchOp{{Op: "test", Path: "/metadata/uid", Value: string(obj.UID)}}, tests...)
	data, err := json.Marshal(append(ops, changes...))
	if err != nil {
		panic(fmt.Sprintf("garbagecollector: encoding a JSON patch: %v", err)) // plain strings and bools
	}
	return data
}
