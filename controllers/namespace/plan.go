package namespace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// content is what a cache holds of one resource in the namespace.
type content struct {
	gvr     schema.GroupVersionResource
	objects []*metav1.PartialObjectMetadata
}

// pass is what one pass over a terminating namespace found and must do.
type pass struct {
	// Delete are the resources with objects not yet being deleted.
	Delete []schema.GroupVersionResource
	// Remaining counts the objects left, by group-resource ("pods",
	// "deployments.apps"), whether being deleted or not.
	Remaining map[string]int
	// Finalizers counts the objects being deleted that wait for a
	// finalizer, by finalizer.
	Finalizers map[string]int
}

// Empty reports whether nothing is left.
func (p pass) Empty() bool { return len(p.Remaining) == 0 }

// planPass looks at what the caches hold of a namespace.
func planPass(contents []content) pass {
	p := pass{Remaining: map[string]int{}, Finalizers: map[string]int{}}
	for _, c := range contents {
		if len(c.objects) == 0 {
			continue
		}
		p.Remaining[c.gvr.GroupResource().String()] += len(c.objects)
		live := false
		for _, o := range c.objects {
			if o.DeletionTimestamp == nil {
				live = true
				continue
			}
			for _, f := range o.Finalizers {
				p.Finalizers[f]++
			}
		}
		if live {
			p.Delete = append(p.Delete, c.gvr)
		}
	}
	return p
}

// Condition reasons and messages, as upstream's.
const (
	reasonResourcesDiscovered   = "ResourcesDiscovered"
	reasonGroupVersionsParsed   = "ParsedGroupVersions"
	reasonContentDeleted        = "ContentDeleted"
	reasonContentDeletionFailed = "ContentDeletionFailed"
	reasonContentRemoved        = "ContentRemoved"
	reasonSomeResourcesRemain   = "SomeResourcesRemain"
	reasonNoFinalizers          = "ContentHasNoFinalizers"
	reasonSomeFinalizersRemain  = "SomeFinalizersRemain"
)

// conditions returns the namespace's deletion conditions after a pass that
// left p and failed to delete the collections in failures.
func conditions(p pass, failures []string) []corev1.NamespaceCondition {
	out := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: reasonResourcesDiscovered,
			Message: "All resources successfully discovered"},
		{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionFalse, Reason: reasonGroupVersionsParsed,
			Message: "All legacy kube types successfully parsed"},
	}
	if len(failures) == 0 {
		out = append(out, corev1.NamespaceCondition{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse,
			Reason: reasonContentDeleted, Message: "All content successfully deleted, may be waiting on finalization"})
	} else {
		out = append(out, corev1.NamespaceCondition{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue,
			Reason: reasonContentDeletionFailed, Message: fmt.Sprintf("Failed to delete all resource types, %d remaining: %s",
				len(failures), strings.Join(failures, ", "))})
	}
	if p.Empty() {
		out = append(out, corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse,
			Reason: reasonContentRemoved, Message: "All content successfully removed"})
	} else {
		out = append(out, corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
			Reason: reasonSomeResourcesRemain, Message: "Some resources are remaining: " + counts(p.Remaining)})
	}
	if len(p.Finalizers) == 0 {
		out = append(out, corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse,
			Reason: reasonNoFinalizers, Message: "All content-preserving finalizers have been removed"})
	} else {
		out = append(out, corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
			Reason: reasonSomeFinalizersRemain, Message: "Some content in the namespace has finalizers remaining: " + counts(p.Finalizers)})
	}
	return out
}

// counts renders {"pods": 2} as "pods has 2 resource instances", sorted.
func counts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s has %d resource instances", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// mergeConditions sets the new deletion conditions over the old ones,
// keeping other conditions, and an unchanged condition's transition time.
// It reports whether anything changed.
func mergeConditions(old, set []corev1.NamespaceCondition, now metav1.Time) ([]corev1.NamespaceCondition, bool) {
	out := slices.Clone(old)
	changed := false
	for _, c := range set {
		i := slices.IndexFunc(out, func(o corev1.NamespaceCondition) bool { return o.Type == c.Type })
		if i < 0 {
			c.LastTransitionTime = now
			out = append(out, c)
			changed = true
			continue
		}
		o := out[i]
		if o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
			continue
		}
		c.LastTransitionTime = o.LastTransitionTime
		if o.Status != c.Status {
			c.LastTransitionTime = now
		}
		out[i] = c
		changed = true
	}
	return out, changed
}

// withoutFinalizer returns the spec finalizers without f.
func withoutFinalizer(fs []corev1.FinalizerName, f corev1.FinalizerName) []corev1.FinalizerName {
	var out []corev1.FinalizerName
	for _, x := range fs {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}
