// Package frameworktest builds pods and nodes for scheduler tests and runs
// single plugins through their extension points the way a cycle would.
package frameworktest

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a pod.
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod in namespace "default" with UID = name and one
// container "c" without requests.
func MakePod(name string) *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "pause"}}},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// UID sets the UID.
func (p *PodWrapper) UID(uid string) *PodWrapper { p.Pod.UID = types.UID(uid); return p }

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Node sets spec.nodeName.
func (p *PodWrapper) Node(name string) *PodWrapper { p.Spec.NodeName = name; return p }

// Priority sets spec.priority.
func (p *PodWrapper) Priority(n int32) *PodWrapper { p.Spec.Priority = &n; return p }

// PreemptNever sets spec.preemptionPolicy to Never.
func (p *PodWrapper) PreemptNever() *PodWrapper {
	never := v1.PreemptNever
	p.Spec.PreemptionPolicy = &never
	return p
}

// StartTime sets status.startTime to the Unix second sec.
func (p *PodWrapper) StartTime(sec int64) *PodWrapper {
	t := metav1.Unix(sec, 0)
	p.Status.StartTime = &t
	return p
}

// Req sets the first container's requests, e.g. {"cpu": "500m"}.
func (p *PodWrapper) Req(req map[string]string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests = List(req)
	return p
}

// Container adds a container with requests.
func (p *PodWrapper) Container(image string, req map[string]string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{
		Name: "c" + strconv.Itoa(len(p.Spec.Containers)), Image: image,
		Resources: v1.ResourceRequirements{Requests: List(req)},
	})
	return p
}

// InitReq adds an init container with requests.
func (p *PodWrapper) InitReq(req map[string]string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
		Name: "i" + strconv.Itoa(len(p.Spec.InitContainers)), Image: "init",
		Resources: v1.ResourceRequirements{Requests: List(req)},
	})
	return p
}

// SidecarReq adds a restartable (sidecar) init container with requests.
func (p *PodWrapper) SidecarReq(req map[string]string) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.InitReq(req)
	p.Spec.InitContainers[len(p.Spec.InitContainers)-1].RestartPolicy = &always
	return p
}

// Image sets the first container's image.
func (p *PodWrapper) Image(image string) *PodWrapper { p.Spec.Containers[0].Image = image; return p }

// HostPort adds a host port to the first container.
func (p *PodWrapper) HostPort(ip string, proto v1.Protocol, port int32) *PodWrapper {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{HostIP: ip, Protocol: proto, HostPort: port, ContainerPort: port})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(key string, op v1.TolerationOperator, value string, effect v1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

// NodeSelector adds a spec.nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// RequiredNodeAffinity adds a required node selector term.
func (p *PodWrapper) RequiredNodeAffinity(term v1.NodeSelectorTerm) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	}
	r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	r.NodeSelectorTerms = append(r.NodeSelectorTerms, term)
	return p
}

// PreferredNodeAffinity adds a preferred node affinity term.
func (p *PodWrapper) PreferredNodeAffinity(weight int32, term v1.NodeSelectorTerm) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.PreferredSchedulingTerm{Weight: weight, Preference: term})
	return p
}

// PodAffinity adds a required pod affinity term.
func (p *PodWrapper) PodAffinity(term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return p
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return p
}

// Spread adds a topology spread constraint selecting pods with the labels.
func (p *PodWrapper) Spread(maxSkew int32, key string, when v1.UnsatisfiableConstraintAction, selector map[string]string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
	})
	return p
}

// Term returns a pod affinity term for pods with the labels, over key.
func Term(key string, selector map[string]string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
}

// Expr returns a node selector term with one expression.
func Expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

// NodeWrapper builds a node.
type NodeWrapper struct{ v1.Node }

// MakeNode starts a node with the hostname label and allocatable of 32
// cpu, 64Gi memory, 110 pods, 100Gi ephemeral-storage.
func MakeNode(name string) *NodeWrapper {
	n := &NodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
		Labels: map[string]string{v1.LabelHostname: name}}}}
	return n.Capacity(map[string]string{"cpu": "32", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"})
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Capacity sets capacity and allocatable.
func (n *NodeWrapper) Capacity(res map[string]string) *NodeWrapper {
	n.Status.Capacity = List(res)
	n.Status.Allocatable = List(res)
	return n
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.Labels[k] = v; return n }

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Image reports an image of size bytes on the node.
func (n *NodeWrapper) Image(size int64, names ...string) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
	return n
}

// List parses {"cpu": "1"} into a ResourceList.
func List(m map[string]string) v1.ResourceList {
	if m == nil {
		return nil
	}
	out := v1.ResourceList{}
	for k, v := range m {
		out[v1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}
