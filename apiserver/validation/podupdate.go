package validation

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields lists, as the error message shows it, what a pod
// update may change.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// validatePodUpdate validates a change of a pod. A pod's spec is fixed once
// created except for container images, a shorter active deadline, added
// tolerations, removed scheduling gates and a grace period of 1 replacing a
// negative one; any other change is one Forbidden error on spec.
func validatePodUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := validateMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePodMetaAndSpec(pod)...)
	errs = append(errs, validateMirrorAnnotationUpdate(pod.Annotations, old.Annotations)...)

	for _, list := range []struct {
		name     string
		new, old []corev1.Container
	}{{"containers", pod.Spec.Containers, old.Spec.Containers}, {"initContainers", pod.Spec.InitContainers, old.Spec.InitContainers}} {
		if len(list.new) != len(list.old) {
			return append(errs, field.Forbidden(specPath.Child(list.name), "pod updates may not add or remove containers"))
		}
	}

	deadline := specPath.Child("activeDeadlineSeconds")
	switch n, o := pod.Spec.ActiveDeadlineSeconds, old.Spec.ActiveDeadlineSeconds; {
	case n != nil && (*n < 0 || *n > math.MaxInt32):
		return append(errs, field.Invalid(deadline, *n, validation.InclusiveRangeError(0, math.MaxInt32)))
	case n != nil && o != nil && *n > *o:
		return append(errs, field.Invalid(deadline, *n, "must be less than or equal to previous value"))
	case n == nil && o != nil:
		errs = append(errs, field.Invalid(deadline, n, "must not update from a positive integer to nil value"))
	}

	errs = append(errs, validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyRemovedGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		return errs
	}
	// Put back the old value of everything that may change; what differs
	// then is what may not.
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.Tolerations = old.Spec.Tolerations
	munged.SchedulingGates = old.Spec.SchedulingGates
	if g, og := munged.TerminationGracePeriodSeconds, old.Spec.TerminationGracePeriodSeconds; g != nil && og != nil && *og < 0 && *g == 1 {
		munged.TerminationGracePeriodSeconds = og
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%s",
			strings.Join(updatablePodSpecFields, ","), diff.Diff(old.Spec, *munged))))
	}
	return errs
}

// validateMirrorAnnotationUpdate forbids turning a pod into a mirror pod or
// back: only the kubelet creates mirror pods.
func validateMirrorAnnotationUpdate(annotations, old map[string]string) field.ErrorList {
	p := metadataPath.Child("annotations").Key(corev1.MirrorPodAnnotationKey)
	nv, isMirror := annotations[corev1.MirrorPodAnnotationKey]
	ov, wasMirror := old[corev1.MirrorPodAnnotationKey]
	switch {
	case wasMirror && (!isMirror || nv != ov):
		return field.ErrorList{field.Forbidden(p, "may not remove or update mirror pod annotation")}
	case isMirror && !wasMirror:
		return field.ErrorList{field.Forbidden(p, "may not add mirror pod annotation")}
	}
	return nil
}

// validateOnlyAddedTolerations requires every old toleration to be kept,
// except that its tolerationSeconds may change.
func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, path *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, t := range tolerations {
			o.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(o, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(path, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil // the tolerations themselves are checked with the rest of the spec
}

// validateOnlyRemovedGates forbids adding scheduling gates to a pod.
func validateOnlyRemovedGates(gates, old []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	had := map[string]bool{}
	for _, g := range old {
		had[g.Name] = true
	}
	var errs field.ErrorList
	for i, g := range gates {
		if !had[g.Name] {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"),
				fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}
