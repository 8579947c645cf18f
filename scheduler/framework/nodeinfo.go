package framework

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NodeInfo is a node and what the pods assigned (or assumed) to it use.
// The Node may be nil while pods name a node the snapshot has not seen.
type NodeInfo struct {
	node *v1.Node

	// Pods are the pods on the node, in the order they were added.
	Pods []*PodInfo
	// PodsWithAffinity are the Pods with any pod (anti-)affinity term.
	PodsWithAffinity []*PodInfo
	// PodsWithRequiredAntiAffinity are the Pods with a required
	// anti-affinity term.
	PodsWithRequiredAntiAffinity []*PodInfo

	// UsedPorts are the host ports the Pods bind.
	UsedPorts HostPortInfo
	// Requested is the sum of the Pods' requests.
	Requested Resource
	// NonZeroRequested is the sum with DefaultMilliCPURequest and
	// DefaultMemoryRequest for containers that request nothing.
	NonZeroRequested Resource
	// Allocatable is the node's status.allocatable.
	Allocatable Resource
	// ImageSizes maps the normalized names of the images the node reports
	// (status.images) to their sizes in bytes.
	ImageSizes map[string]int64
}

// NewNodeInfo returns a NodeInfo for node (which may be nil) with pods.
func NewNodeInfo(node *v1.Node, pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{UsedPorts: HostPortInfo{}}
	if node != nil {
		ni.SetNode(node)
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, nil if unknown.
func (n *NodeInfo) Node() *v1.Node { return n.node }

// Name returns the node's name, "" if unknown.
func (n *NodeInfo) Name() string {
	if n.node == nil {
		return ""
	}
	return n.node.Name
}

// SetNode sets the node and recomputes Allocatable and ImageSizes.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.ImageSizes = make(map[string]int64, len(node.Status.Images))
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.ImageSizes[NormalizeImageName(name)] = img.SizeBytes
		}
	}
}

// AddPod adds a pod to the node.
func (n *NodeInfo) AddPod(pod *v1.Pod) {
	n.AddPodInfo(PodInfoOf(pod))
}

// AddPodInfo adds a parsed pod to the node.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod removes the pod with pod's key (UID, or namespace/name).
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	key := PodKey(pod)
	for i, pi := range n.Pods {
		if PodKey(pi.Pod) != key {
			continue
		}
		n.PodsWithAffinity = removeByKey(n.PodsWithAffinity, key)
		n.PodsWithRequiredAntiAffinity = removeByKey(n.PodsWithRequiredAntiAffinity, key)
		last := len(n.Pods) - 1
		copy(n.Pods[i:], n.Pods[i+1:])
		n.Pods[last] = nil
		n.Pods = n.Pods[:last]
		n.update(pi, -1)
		return nil
	}
	return fmt.Errorf("pod %s/%s is not on node %q", pod.Namespace, pod.Name, n.Name())
}

func removeByKey(list []*PodInfo, key string) []*PodInfo {
	for i, pi := range list {
		if PodKey(pi.Pod) == key {
			last := len(list) - 1
			copy(list[i:], list[i+1:])
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	n.Requested.Plus(&pi.Requests, sign)
	n.NonZeroRequested.Plus(&pi.NonZeroRequests, sign)
	forEachHostPort(pi.Pod, func(p v1.ContainerPort) {
		if sign > 0 {
			n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
		} else {
			n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
		}
	})
}

// Clone returns a copy whose pod lists, resources and ports can change
// without affecting n. PodInfos and the node are shared (read-only).
func (n *NodeInfo) Clone() *NodeInfo {
	return &NodeInfo{
		node:                         n.node,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    n.UsedPorts.Clone(),
		Requested:                    n.Requested.Clone(),
		NonZeroRequested:             n.NonZeroRequested.Clone(),
		Allocatable:                  n.Allocatable,
		ImageSizes:                   n.ImageSizes,
	}
}

// ForEachHostPort calls fn for every container port of pod that binds a
// host port, including restartable (sidecar) init containers'.
func ForEachHostPort(pod *v1.Pod, fn func(v1.ContainerPort)) { forEachHostPort(pod, fn) }

func forEachHostPort(pod *v1.Pod, fn func(v1.ContainerPort)) {
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				fn(p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				fn(p)
			}
		}
	}
}

// DefaultBindAllHostIP is the host IP a port binds when it names none.
const DefaultBindAllHostIP = "0.0.0.0"

// ProtocolPort is a protocol and port number.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// HostPortInfo counts the host ports in use by IP, then protocol and port.
type HostPortInfo map[string]map[ProtocolPort]int

func sanitizePort(ip, protocol string) (string, string) {
	if ip == "" {
		ip = DefaultBindAllHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// Add records a use of the port.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitizePort(ip, protocol)
	m := h[ip]
	if m == nil {
		m = make(map[ProtocolPort]int)
		h[ip] = m
	}
	m[ProtocolPort{protocol, port}]++
}

// Remove forgets one use of the port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitizePort(ip, protocol)
	m := h[ip]
	pp := ProtocolPort{protocol, port}
	if m[pp] > 1 {
		m[pp]--
		return
	}
	delete(m, pp)
	if len(m) == 0 {
		delete(h, ip)
	}
}

// CheckConflict reports whether binding the port would clash with a port in
// use: the same protocol and port on the same IP, or where either side
// binds 0.0.0.0.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitizePort(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == DefaultBindAllHostIP {
		for _, m := range h {
			if m[pp] > 0 {
				return true
			}
		}
		return false
	}
	return h[DefaultBindAllHostIP][pp] > 0 || h[ip][pp] > 0
}

// Len returns the number of distinct ports in use.
func (h HostPortInfo) Len() int {
	n := 0
	for _, m := range h {
		n += len(m)
	}
	return n
}

// Clone returns a deep copy.
func (h HostPortInfo) Clone() HostPortInfo {
	out := make(HostPortInfo, len(h))
	for ip, m := range h {
		c := make(map[ProtocolPort]int, len(m))
		for k, v := range m {
			c[k] = v
		}
		out[ip] = c
	}
	return out
}

// NormalizeImageName returns the canonical form of an image reference so a
// pod's "nginx" matches a node's "docker.io/library/nginx:latest": a
// missing registry becomes docker.io (with library/ for single-component
// names) and a missing tag (without a digest) becomes ":latest". Upstream
// only adds ":latest"; the registry expansion is ours, because containerd
// reports fully qualified names.
func NormalizeImageName(name string) string {
	if name == "" {
		return name
	}
	slash := strings.IndexByte(name, '/')
	first := ""
	if slash >= 0 {
		first = name[:slash]
	}
	switch {
	case slash < 0:
		name = "docker.io/library/" + name
	case first == "index.docker.io":
		name = "docker.io" + name[slash:]
		if strings.Count(name, "/") == 1 {
			name = "docker.io/library/" + name[len("docker.io/"):]
		}
	case first == "docker.io":
		if strings.Count(name, "/") == 1 {
			name = "docker.io/library/" + name[len("docker.io/"):]
		}
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	if strings.LastIndexByte(name, ':') <= strings.LastIndexByte(name, '/') && !strings.Contains(name, "@") {
		name += ":latest"
	}
	return name
}
