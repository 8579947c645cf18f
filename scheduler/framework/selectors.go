package framework

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SetWorkloadSelector records the pod selector of a Service, ReplicaSet,
// StatefulSet or ReplicationController in namespace; key names the object
// (e.g. "Service/web"). Default topology spreading (PodTopologySpread with
// no constraints on the pod) spreads a pod among the pods selected by all
// the recorded selectors of its namespace that select it, as upstream's
// DefaultSelector does from services and the pod's controller.
func (s *Snapshot) SetWorkloadSelector(namespace, key string, sel labels.Selector) {
	if s.workloads == nil {
		s.workloads = make(map[string]map[string]labels.Selector)
	}
	m := s.workloads[namespace]
	if m == nil {
		m = make(map[string]labels.Selector)
		s.workloads[namespace] = m
	}
	m[key] = sel
}

// RemoveWorkloadSelector forgets a selector.
func (s *Snapshot) RemoveWorkloadSelector(namespace, key string) {
	delete(s.workloads[namespace], key)
	if len(s.workloads[namespace]) == 0 {
		delete(s.workloads, namespace)
	}
}

// DefaultSpreadSelector returns the requirements of every recorded
// selector in the pod's namespace that selects the pod, ANDed (in key
// order). It is empty when none does; default spreading then does nothing.
func (s *Snapshot) DefaultSpreadSelector(pod *v1.Pod) labels.Selector {
	m := s.workloads[pod.Namespace]
	out := labels.NewSelector()
	if len(m) == 0 {
		return out
	}
	keys := make([]string, 0, len(m))
	podLabels := labels.Set(pod.Labels)
	for k, sel := range m {
		if !sel.Empty() && sel.Matches(podLabels) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	seen := make(map[string]bool)
	for _, k := range keys {
		reqs, ok := m[k].Requirements()
		if !ok {
			continue
		}
		for _, r := range reqs {
			if !seen[r.String()] {
				seen[r.String()] = true
				out = out.Add(r)
			}
		}
	}
	return out
}
