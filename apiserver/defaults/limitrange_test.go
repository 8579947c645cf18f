package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resources makes a ResourceList of name, quantity pairs (nil when empty).
func resources(kv ...string) corev1.ResourceList {
	if len(kv) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestDefaultLimitRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		item corev1.LimitRangeItem
		want corev1.LimitRangeItem
	}{
		{
			name: "max becomes the default limit and request",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: resources("cpu", "500m")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: resources("cpu", "500m"),
				Default: resources("cpu", "500m"), DefaultRequest: resources("cpu", "500m")},
		},
		{
			name: "default limit becomes the default request",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: resources("memory", "256Mi")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: resources("memory", "256Mi"),
				DefaultRequest: resources("memory", "256Mi")},
		},
		{
			name: "min becomes the default request, not the default limit",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resources("cpu", "100m")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resources("cpu", "100m"),
				DefaultRequest: resources("cpu", "100m")},
		},
		{
			name: "the default limit wins over min for the request",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resources("cpu", "100m"), Max: resources("cpu", "1")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resources("cpu", "100m"), Max: resources("cpu", "1"),
				Default: resources("cpu", "1"), DefaultRequest: resources("cpu", "1")},
		},
		{
			name: "what is set is kept, per resource",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resources("cpu", "50m", "memory", "64Mi"),
				Max: resources("cpu", "2", "memory", "1Gi"), Default: resources("cpu", "200m"), DefaultRequest: resources("memory", "128Mi")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resources("cpu", "50m", "memory", "64Mi"),
				Max: resources("cpu", "2", "memory", "1Gi"), Default: resources("cpu", "200m", "memory", "1Gi"),
				DefaultRequest: resources("cpu", "200m", "memory", "128Mi")},
		},
		{
			name: "Pod items get no defaults",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: resources("cpu", "100m"), Max: resources("cpu", "1")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: resources("cpu", "100m"), Max: resources("cpu", "1")},
		},
		{
			name: "PersistentVolumeClaim items get no defaults",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: resources("storage", "1Gi"), Max: resources("storage", "5Gi")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: resources("storage", "1Gi"), Max: resources("storage", "5Gi")},
		},
		{
			name: "nothing to fill",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: resources("cpu", "2")},
			want: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: resources("cpu", "2")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{tt.item}}}
			Default(lr)
			got := lr.Spec.Limits[0]
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("item = %+v, want %+v", got, tt.want)
			}
			// Unlike the semantic comparison, nothing is added as an empty list.
			if (got.Default == nil) != (tt.want.Default == nil) || (got.DefaultRequest == nil) != (tt.want.DefaultRequest == nil) {
				t.Errorf("default %v, defaultRequest %v: want nil exactly where %+v has none", got.Default, got.DefaultRequest, tt.want)
			}
			again := lr.DeepCopy()
			Default(again)
			if !apiequality.Semantic.DeepEqual(again, lr) {
				t.Errorf("not idempotent: %+v, then %+v", lr.Spec.Limits[0], again.Spec.Limits[0])
			}
		})
	}
}

// TestDefaultLimitRangeCopies: the lists filled in are the item's own, not
// max's or min's.
func TestDefaultLimitRangeCopies(t *testing.T) {
	t.Parallel()
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
		Max: resources("cpu", "500m"), Min: resources("memory", "64Mi")}}}}
	Default(lr)
	item := &lr.Spec.Limits[0]
	item.Default[corev1.ResourceCPU] = resource.MustParse("1")
	item.DefaultRequest[corev1.ResourceMemory] = resource.MustParse("1Gi")
	if q := item.Max[corev1.ResourceCPU]; q.Cmp(resource.MustParse("500m")) != 0 {
		t.Errorf("max cpu = %s after changing the default, want 500m", q.String())
	}
	if q := item.Min[corev1.ResourceMemory]; q.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("min memory = %s after changing the default request, want 64Mi", q.String())
	}
}
