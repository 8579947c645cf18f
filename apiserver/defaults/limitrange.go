package defaults

import corev1 "k8s.io/api/core/v1"

// defaultLimitRange fills each Container item's defaults, as upstream's
// SetDefaults_LimitRangeItem: a resource with a max and no default limit
// gets the max as its default limit; then a resource with a default limit
// and no default request gets the default limit as its default request;
// then a resource with a min and still no default request gets the min.
// Items of other types are left alone.
func defaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		item.Default = fillMissing(item.Default, item.Max)
		item.DefaultRequest = fillMissing(item.DefaultRequest, item.Default)
		item.DefaultRequest = fillMissing(item.DefaultRequest, item.Min)
	}
}

// fillMissing returns list with a copy of every quantity of from that
// list lacks; list is allocated only when something is added.
func fillMissing(list, from corev1.ResourceList) corev1.ResourceList {
	for name, q := range from {
		if _, ok := list[name]; ok {
			continue
		}
		if list == nil {
			list = corev1.ResourceList{}
		}
		list[name] = q.DeepCopy()
	}
	return list
}
