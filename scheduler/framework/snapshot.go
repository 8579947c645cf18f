package framework

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Snapshot is everything a scheduling cycle reads: the nodes with their
// pods, the namespaces' labels and the nominated pods. It doubles as the
// scheduler's cache: the caller applies informer events to it and assumes
// each scheduled pod into it. It is not safe for concurrent use; see the
// package comment.
type Snapshot struct {
	// nodes holds every NodeInfo by name, including ones whose Node is nil
	// because pods name a node not (or no longer) known.
	nodes   map[string]*NodeInfo
	podNode map[string]string // pod key -> node name

	list      []*NodeInfo // nodes with a Node, zone-interleaved; see NodeInfos
	listDirty bool
	zones     map[string]string // node name -> zone key, to notice moves

	withAffinity, withAntiAffinity []*NodeInfo
	affinityDirty                  bool

	namespaces map[string]labels.Set
	imageNodes map[string]int // normalized image name -> nodes reporting it

	nominated     map[string][]*PodInfo // node name -> pods nominated to it
	nominatedNode map[string]string     // pod key -> node name

	workloads map[string]map[string]labels.Selector // namespace -> key -> selector

	storage *storageObjects // claims, volumes and classes; see volumes.go
}

// NewSnapshot builds a snapshot from nodes, the pods on them (pods without
// spec.nodeName and terminated pods are ignored) and namespaces.
func NewSnapshot(nodes []*v1.Node, pods []*v1.Pod, namespaces []*v1.Namespace) *Snapshot {
	s := &Snapshot{
		nodes:         make(map[string]*NodeInfo, len(nodes)),
		podNode:       make(map[string]string, len(pods)),
		zones:         make(map[string]string, len(nodes)),
		namespaces:    make(map[string]labels.Set, len(namespaces)),
		imageNodes:    make(map[string]int),
		nominated:     make(map[string][]*PodInfo),
		nominatedNode: make(map[string]string),
	}
	for _, n := range nodes {
		s.AddNode(n)
	}
	for _, p := range pods {
		s.AddPod(p)
	}
	for _, ns := range namespaces {
		s.SetNamespace(ns)
	}
	return s
}

// AddNode adds a node or replaces it (a node update).
func (s *Snapshot) AddNode(node *v1.Node) {
	ni := s.nodes[node.Name]
	if ni == nil {
		ni = NewNodeInfo(nil)
		s.nodes[node.Name] = ni
	}
	if ni.node != nil {
		s.countImages(ni, -1)
	} else {
		s.listDirty = true
	}
	ni.SetNode(node)
	s.countImages(ni, 1)
	if z := zoneKey(node); s.zones[node.Name] != z {
		s.zones[node.Name] = z
		s.listDirty = true
	}
}

// UpdateNode is AddNode.
func (s *Snapshot) UpdateNode(node *v1.Node) { s.AddNode(node) }

// RemoveNode removes a node. Pods still assigned to it stay (and keep
// counting) until they are removed, as upstream's cache does.
func (s *Snapshot) RemoveNode(name string) {
	ni := s.nodes[name]
	if ni == nil || ni.node == nil {
		return
	}
	s.countImages(ni, -1)
	ni.node = nil
	ni.ImageSizes = nil
	ni.Allocatable = Resource{}
	if len(ni.Pods) == 0 {
		delete(s.nodes, name)
	}
	delete(s.zones, name)
	s.listDirty = true
	s.affinityDirty = true
}

func (s *Snapshot) countImages(ni *NodeInfo, sign int) {
	for name := range ni.ImageSizes {
		s.imageNodes[name] += sign
		if s.imageNodes[name] <= 0 {
			delete(s.imageNodes, name)
		}
	}
}

// AddPod adds a pod to the node in its spec.nodeName, or replaces it (a pod
// update, or an assumed pod confirmed by the informer). A pod in phase
// Succeeded or Failed is removed instead, since it no longer uses its
// node. A pod without spec.nodeName is ignored: an informer update of a
// pod still pending must not undo its assumption.
func (s *Snapshot) AddPod(pod *v1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	s.RemovePod(pod)
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return
	}
	s.RemoveNominatedPod(pod)
	ni := s.nodes[pod.Spec.NodeName]
	if ni == nil {
		ni = NewNodeInfo(nil)
		s.nodes[pod.Spec.NodeName] = ni
	}
	pi := PodInfoOf(pod)
	ni.AddPodInfo(pi)
	s.podNode[PodKey(pod)] = pod.Spec.NodeName
	if pi.HasAffinity() {
		s.affinityDirty = true
	}
}

// UpdatePod is AddPod.
func (s *Snapshot) UpdatePod(pod *v1.Pod) { s.AddPod(pod) }

// RemovePod removes the pod with pod's key from wherever it is; it reports
// whether it was there.
func (s *Snapshot) RemovePod(pod *v1.Pod) bool {
	key := PodKey(pod)
	name, ok := s.podNode[key]
	if !ok {
		return false
	}
	delete(s.podNode, key)
	ni := s.nodes[name]
	if ni == nil {
		return true
	}
	had := len(ni.PodsWithAffinity)
	_ = ni.RemovePod(pod)
	if had != len(ni.PodsWithAffinity) {
		s.affinityDirty = true
	}
	if ni.node == nil && len(ni.Pods) == 0 {
		delete(s.nodes, name)
	}
	return true
}

// NodeNameOf returns the node a pod is on in the snapshot.
func (s *Snapshot) NodeNameOf(pod *v1.Pod) (string, bool) {
	n, ok := s.podNode[PodKey(pod)]
	return n, ok
}

// SetNamespace records a namespace's labels.
func (s *Snapshot) SetNamespace(ns *v1.Namespace) {
	s.namespaces[ns.Name] = labels.Set(ns.Labels)
}

// RemoveNamespace forgets a namespace.
func (s *Snapshot) RemoveNamespace(name string) { delete(s.namespaces, name) }

// NamespaceLabels returns a namespace's labels (nil if unknown).
func (s *Snapshot) NamespaceLabels(name string) labels.Set { return s.namespaces[name] }

// NamespacesMatching returns the names of the namespaces whose labels
// match sel.
func (s *Snapshot) NamespacesMatching(sel labels.Selector) []string {
	var out []string
	for name, l := range s.namespaces {
		if sel.Matches(l) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// AddNominatedPod records that preemption nominated pod to nodeName
// (status.nominatedNodeName): filters then keep room for it when
// scheduling pods of lower or equal priority there. Adding again moves it.
func (s *Snapshot) AddNominatedPod(pod *v1.Pod, nodeName string) {
	s.RemoveNominatedPod(pod)
	if nodeName == "" {
		return
	}
	s.nominated[nodeName] = append(s.nominated[nodeName], PodInfoOf(pod))
	s.nominatedNode[PodKey(pod)] = nodeName
}

// RemoveNominatedPod forgets a nomination.
func (s *Snapshot) RemoveNominatedPod(pod *v1.Pod) {
	key := PodKey(pod)
	name, ok := s.nominatedNode[key]
	if !ok {
		return
	}
	delete(s.nominatedNode, key)
	s.nominated[name] = removeByKey(s.nominated[name], key)
	if len(s.nominated[name]) == 0 {
		delete(s.nominated, name)
	}
}

// NominatedPods returns the pods nominated to a node.
func (s *Snapshot) NominatedPods(nodeName string) []*PodInfo { return s.nominated[nodeName] }

// Get returns a node's NodeInfo, or nil if the node is unknown.
func (s *Snapshot) Get(name string) *NodeInfo {
	if ni := s.nodes[name]; ni != nil && ni.node != nil {
		return ni
	}
	return nil
}

// NumNodes returns the number of known nodes.
func (s *Snapshot) NumNodes() int { return len(s.NodeInfos()) }

// ImageNumNodes returns how many nodes report the (normalized) image.
func (s *Snapshot) ImageNumNodes(name string) int { return s.imageNodes[name] }

// NodeInfos returns the known nodes in scheduling order: zones (region and
// zone labels) sorted by name and taken round-robin, nodes sorted by name
// within a zone, so a search that stops early still spreads over zones.
// The slice is shared; do not modify it.
func (s *Snapshot) NodeInfos() []*NodeInfo {
	if s.listDirty || s.list == nil {
		s.rebuildList()
	}
	return s.list
}

// HavePodsWithAffinity returns the nodes with a pod that has any pod
// (anti-)affinity term, in scheduling order.
func (s *Snapshot) HavePodsWithAffinity() []*NodeInfo {
	s.rebuildAffinity()
	return s.withAffinity
}

// HavePodsWithRequiredAntiAffinity returns the nodes with a pod that has a
// required anti-affinity term, in scheduling order.
func (s *Snapshot) HavePodsWithRequiredAntiAffinity() []*NodeInfo {
	s.rebuildAffinity()
	return s.withAntiAffinity
}

func (s *Snapshot) rebuildList() {
	byZone := make(map[string][]*NodeInfo)
	for name, ni := range s.nodes {
		if ni.node != nil {
			z := s.zones[name]
			byZone[z] = append(byZone[z], ni)
		}
	}
	zones := make([]string, 0, len(byZone))
	for z, list := range byZone {
		zones = append(zones, z)
		sort.Slice(list, func(i, j int) bool { return list[i].node.Name < list[j].node.Name })
	}
	sort.Strings(zones)
	list := make([]*NodeInfo, 0, len(s.nodes))
	for i := 0; ; i++ {
		added := false
		for _, z := range zones {
			if i < len(byZone[z]) {
				list = append(list, byZone[z][i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	s.list = list
	s.listDirty = false
	s.affinityDirty = true
}

func (s *Snapshot) rebuildAffinity() {
	list := s.NodeInfos()
	if !s.affinityDirty && s.withAffinity != nil {
		return
	}
	s.withAffinity = make([]*NodeInfo, 0)
	s.withAntiAffinity = make([]*NodeInfo, 0)
	for _, ni := range list {
		if len(ni.PodsWithAffinity) > 0 {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.withAntiAffinity = append(s.withAntiAffinity, ni)
		}
	}
	s.affinityDirty = false
}

func zoneKey(node *v1.Node) string {
	l := node.Labels
	region, zone := l[v1.LabelTopologyRegion], l[v1.LabelTopologyZone]
	if region == "" {
		region = l[v1.LabelFailureDomainBetaRegion]
	}
	if zone == "" {
		zone = l[v1.LabelFailureDomainBetaZone]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}
