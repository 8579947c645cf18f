package quota

import (
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Add returns a + b, name by name; names in only one list keep its value.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	for name, q := range b {
		sum, ok := out[name]
		if !ok {
			out[name] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// Subtract returns a - b for every name of either list, never below zero:
// the growth of usage from b to a.
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for name, q := range a {
		d := q.DeepCopy()
		if other, ok := b[name]; ok {
			d.Sub(other)
		}
		out[name] = nonNegative(d)
	}
	for name, q := range b {
		if _, ok := out[name]; !ok {
			out[name] = resource.Quantity{Format: q.Format}
		}
	}
	return out
}

func nonNegative(q resource.Quantity) resource.Quantity {
	if q.Sign() < 0 {
		return resource.Quantity{Format: q.Format}
	}
	return q
}

// Mask returns the entries of list whose names are in names.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range names {
		if q, ok := list[name]; ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// Covered returns the part of usage a quota with these hard limits tracks.
func Covered(hard, usage corev1.ResourceList) corev1.ResourceList {
	return Mask(usage, Names(hard))
}

// Names returns the names of list, sorted.
func Names(list corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(list))
}

// Exceeded returns, sorted, the names whose used quantity is above its hard
// limit. Names hard does not limit are never exceeded.
func Exceeded(hard, used corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range Names(used) {
		limit, ok := hard[name]
		if q := used[name]; ok && q.Cmp(limit) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// RemoveZeros returns list without its zero quantities.
func RemoveZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		if !q.IsZero() {
			out[name] = q
		}
	}
	return out
}

// Negative returns, sorted, the names of list with a negative quantity.
func Negative(list corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range Names(list) {
		if q := list[name]; q.Sign() < 0 {
			out = append(out, name)
		}
	}
	return out
}

// Format prints a list as upstream's quota messages do:
// "limits.cpu=2,pods=1", sorted by name.
func Format(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, name := range Names(list) {
		q := list[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// FormatNames prints names sorted and comma-separated.
func FormatNames(names []corev1.ResourceName) string {
	s := make([]string, 0, len(names))
	for _, n := range names {
		s = append(s, string(n))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// resourceZero is a zero count, printed "0".
func resourceZero() resource.Quantity { return resource.Quantity{Format: resource.DecimalSI} }
