// Package nodeauth is the Node authorizer: a kubelet may read the secrets,
// configmaps and persistentvolumeclaims of the pods bound to its node, the
// persistentvolumes bound to those claims, and request tokens for their
// serviceaccounts, and nothing else of those kinds; it reads only the pods
// bound to its node and its own Node and Lease, and otherwise may do what
// the system:node rules (rbac.NodeRules) allow. A Graph, fed pod events by
// a pods informer and claim events by a claims informer, holds which node
// runs and references what; the Authorizer answers from it.
package nodeauth

import (
	"cmp"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// kind is the type of object a pod references.
type kind uint8

const (
	secretKind kind = iota
	configMapKind
	pvcKind
	serviceAccountKind
)

// ref is one object a pod references, in the pod's namespace.
type ref struct {
	kind      kind
	namespace string
	name      string
}

func compareRefs(a, b ref) int {
	if c := cmp.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

type podKey struct{ namespace, name string }

// podRefs is what the graph remembers of a pod: its node and the sorted,
// distinct references it contributed there.
type podRefs struct {
	node string
	refs []ref
}

// Graph is the set of objects the pods bound to each node reference,
// counted so that a reference shared by two pods outlives the deletion of
// one. It keeps the references only, never the pods. Safe for concurrent
// use.
type Graph struct {
	mu    sync.RWMutex
	pods  map[podKey]podRefs
	nodes map[string]map[ref]int
	// claimVolume is each bound claim's volume and volumeClaims its
	// inverse (claims.go).
	claimVolume  map[claimKey]string
	volumeClaims map[string]map[claimKey]struct{}
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{pods: map[podKey]podRefs{}, nodes: map[string]map[ref]int{}}
}

// AddPod records the references of a pod (none while it is not bound).
func (g *Graph) AddPod(p *corev1.Pod) {
	g.set(podKey{p.Namespace, p.Name}, refsOf(p))
}

// UpdatePod replaces the references of a pod: it may have been bound, or
// gained ephemeral containers.
func (g *Graph) UpdatePod(old, p *corev1.Pod) {
	if old != nil && (old.Namespace != p.Namespace || old.Name != p.Name) {
		g.set(podKey{old.Namespace, old.Name}, podRefs{})
	}
	g.AddPod(p)
}

// DeletePod forgets the references of a pod.
func (g *Graph) DeletePod(p *corev1.Pod) {
	g.set(podKey{p.Namespace, p.Name}, podRefs{})
}

// set replaces what the graph holds for one pod; a podRefs without a node
// removes the pod.
func (g *Graph) set(key podKey, next podRefs) {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev, had := g.pods[key]
	if had && prev.node == next.node && slices.Equal(prev.refs, next.refs) {
		return
	}
	if had {
		counts := g.nodes[prev.node]
		for _, r := range prev.refs {
			if counts[r]--; counts[r] <= 0 {
				delete(counts, r)
			}
		}
		if len(counts) == 0 {
			delete(g.nodes, prev.node)
		}
		delete(g.pods, key)
	}
	if next.node == "" {
		return
	}
	g.pods[key] = next
	if len(next.refs) == 0 {
		return
	}
	counts := g.nodes[next.node]
	if counts == nil {
		counts = make(map[ref]int, len(next.refs))
		g.nodes[next.node] = counts
	}
	for _, r := range next.refs {
		counts[r]++
	}
}

// hasPod reports whether the pod namespace/name is bound to node.
func (g *Graph) hasPod(node, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	p, ok := g.pods[podKey{namespace, name}]
	return ok && p.node == node
}

// has reports whether a pod bound to node references the object.
func (g *Graph) has(node string, r ref) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nodes[node][r] > 0
}

// refsOf returns the node of a pod and the objects it references, as
// upstream's pod visitors find them: volumes (projected sources, storage
// plugin secret references, claims and ephemeral claims), env and envFrom
// of every container (init and ephemeral too), image pull secrets, and
// the service account.
func refsOf(p *corev1.Pod) podRefs {
	if p.Spec.NodeName == "" {
		return podRefs{}
	}
	ns := p.Namespace
	var refs []ref
	add := func(k kind, name string) {
		if name != "" {
			refs = append(refs, ref{kind: k, namespace: ns, name: name})
		}
	}
	add(serviceAccountKind, p.Spec.ServiceAccountName)
	for _, s := range p.Spec.ImagePullSecrets {
		add(secretKind, s.Name)
	}
	visitEnv := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				add(secretKind, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(configMapKind, e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(secretKind, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(configMapKind, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		visitEnv(c.EnvFrom, c.Env)
	}
	for _, c := range p.Spec.Containers {
		visitEnv(c.EnvFrom, c.Env)
	}
	for _, c := range p.Spec.EphemeralContainers {
		visitEnv(c.EnvFrom, c.Env)
	}
	for i := range p.Spec.Volumes {
		volumeRefs(p.Name, &p.Spec.Volumes[i], add)
	}
	slices.SortFunc(refs, compareRefs)
	return podRefs{node: p.Spec.NodeName, refs: slices.Clip(slices.Compact(refs))}
}

// volumeRefs reports the objects one volume of pod podName references.
func volumeRefs(podName string, v *corev1.Volume, add func(kind, string)) {
	secretRef := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add(secretKind, r.Name)
		}
	}
	switch {
	case v.Secret != nil:
		add(secretKind, v.Secret.SecretName)
	case v.ConfigMap != nil:
		add(configMapKind, v.ConfigMap.Name)
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			if src.Secret != nil {
				add(secretKind, src.Secret.Name)
			}
			if src.ConfigMap != nil {
				add(configMapKind, src.ConfigMap.Name)
			}
		}
	case v.PersistentVolumeClaim != nil:
		add(pvcKind, v.PersistentVolumeClaim.ClaimName)
	case v.Ephemeral != nil:
		// The ephemeral volume controller names the claim <pod>-<volume>.
		add(pvcKind, podName+"-"+v.Name)
	case v.AzureFile != nil:
		add(secretKind, v.AzureFile.SecretName)
	case v.CephFS != nil:
		secretRef(v.CephFS.SecretRef)
	case v.Cinder != nil:
		secretRef(v.Cinder.SecretRef)
	case v.FlexVolume != nil:
		secretRef(v.FlexVolume.SecretRef)
	case v.RBD != nil:
		secretRef(v.RBD.SecretRef)
	case v.ScaleIO != nil:
		secretRef(v.ScaleIO.SecretRef)
	case v.ISCSI != nil:
		secretRef(v.ISCSI.SecretRef)
	case v.StorageOS != nil:
		secretRef(v.StorageOS.SecretRef)
	case v.CSI != nil:
		secretRef(v.CSI.NodePublishSecretRef)
	}
}

// PodHandler feeds a Graph from a pods informer: it satisfies the bus
// informer's Handler[*corev1.Pod].
type PodHandler struct{ g *Graph }

// Handler returns the graph's pods informer handler.
func (g *Graph) Handler() PodHandler { return PodHandler{g: g} }

// OnAdd records a pod.
func (h PodHandler) OnAdd(p *corev1.Pod) { h.g.AddPod(p) }

// OnUpdate replaces a pod's references.
func (h PodHandler) OnUpdate(old, p *corev1.Pod) { h.g.UpdatePod(old, p) }

// OnDelete forgets a pod.
func (h PodHandler) OnDelete(p *corev1.Pod) { h.g.DeletePod(p) }
