package framework

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

const (
	// DefaultMilliCPURequest is the cpu a container without a cpu request
	// counts as when nodes are scored (not when they are filtered), so that
	// best-effort pods still spread.
	DefaultMilliCPURequest int64 = 100
	// DefaultMemoryRequest is the same for memory: 200 MiB.
	DefaultMemoryRequest int64 = 200 * 1024 * 1024
)

// Resource is an amount of compute resources in integers: cpu in
// millicores, memory and ephemeral-storage in bytes, pods as a count, and
// scalar resources (extended resources such as example.com/gpu, hugepages)
// in their units.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is the node's pod capacity; unused for requests.
	AllowedPodNumber int
	ScalarResources  map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds every quantity of rl.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds n of a scalar resource.
func (r *Resource) AddScalar(name v1.ResourceName, n int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = make(map[v1.ResourceName]int64)
	}
	r.ScalarResources[name] += n
}

// Plus adds o to r (sign +1) or subtracts it (sign -1).
func (r *Resource) Plus(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += int(sign) * o.AllowedPodNumber
	for name, n := range o.ScalarResources {
		r.AddScalar(name, sign*n)
	}
}

// SetMax raises each amount of r to o's where o's is larger.
func (r *Resource) SetMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	r.AllowedPodNumber = max(r.AllowedPodNumber, o.AllowedPodNumber)
	for name, n := range o.ScalarResources {
		if cur, ok := r.ScalarResources[name]; !ok || n > cur {
			if r.ScalarResources == nil {
				r.ScalarResources = make(map[v1.ResourceName]int64)
			}
			r.ScalarResources[name] = n
		}
	}
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	out := r
	if r.ScalarResources != nil {
		out.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			out.ScalarResources[k] = v
		}
	}
	return out
}

// Get returns the amount of one resource (cpu in millicores).
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return int64(r.AllowedPodNumber)
	default:
		return r.ScalarResources[name]
	}
}

// IsZero reports whether every amount is zero (AllowedPodNumber aside).
func (r *Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 {
		return false
	}
	for _, n := range r.ScalarResources {
		if n != 0 {
			return false
		}
	}
	return true
}

// IsExtendedResourceName reports whether name is an extended resource: a
// domain-prefixed name outside kubernetes.io (example.com/gpu).
func IsExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") &&
		!strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

// IsScalarResourceName reports whether name is counted as a scalar
// resource: extended resources, hugepages-*, prefixed native resources and
// attachable volumes.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) {
		return true
	}
	return strings.Contains(s, "/") && !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

// PodRequests returns what a pod requests, as upstream computes it:
//   - the sum of its containers' requests, plus its restartable (sidecar)
//     init containers';
//   - raised to the largest single init container's requests plus the
//     sidecars started before it, since init containers run one at a time;
//   - cpu, memory and hugepages from spec.resources (pod-level resources)
//     instead, where set;
//   - plus spec.overhead.
//
// With nonZero, a container that sets no cpu (memory) request counts as
// DefaultMilliCPURequest (DefaultMemoryRequest), as scoring does; an
// explicit zero stays zero.
func PodRequests(pod *v1.Pod, nonZero bool) Resource {
	var reqs Resource
	for i := range pod.Spec.Containers {
		c := containerRequests(&pod.Spec.Containers[i], nonZero)
		reqs.Plus(&c, 1)
	}
	var sidecars, initMax Resource
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		c := containerRequests(ic, nonZero)
		if ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
			reqs.Plus(&c, 1)
			sidecars.Plus(&c, 1)
			initMax.SetMax(&sidecars)
			continue
		}
		c.Plus(&sidecars, 1)
		initMax.SetMax(&c)
	}
	reqs.SetMax(&initMax)

	if pr := pod.Spec.Resources; pr != nil {
		for name, q := range pr.Requests {
			switch {
			case name == v1.ResourceCPU:
				reqs.MilliCPU = q.MilliValue()
			case name == v1.ResourceMemory:
				reqs.Memory = q.Value()
			case strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix):
				if reqs.ScalarResources == nil {
					reqs.ScalarResources = make(map[v1.ResourceName]int64)
				}
				reqs.ScalarResources[name] = q.Value()
			}
		}
	}
	if pod.Spec.Overhead != nil {
		reqs.Add(pod.Spec.Overhead)
	}
	reqs.AllowedPodNumber = 0
	return reqs
}

func containerRequests(c *v1.Container, nonZero bool) Resource {
	r := NewResource(c.Resources.Requests)
	r.AllowedPodNumber = 0
	if nonZero {
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if _, ok := c.Resources.Requests[v1.ResourceMemory]; !ok {
			r.Memory = DefaultMemoryRequest
		}
	}
	return r
}
