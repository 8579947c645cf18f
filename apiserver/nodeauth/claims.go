package nodeauth

import (
	corev1 "k8s.io/api/core/v1"
)

// claimKey names a PersistentVolumeClaim.
type claimKey struct{ namespace, name string }

// SetClaim records the volume a claim is bound to (spec.volumeName; none
// while it is unbound), the graph's claim → volume edge: a node whose
// pods use the claim may get that PersistentVolume.
func (g *Graph) SetClaim(c *corev1.PersistentVolumeClaim) {
	g.setClaim(claimKey{c.Namespace, c.Name}, c.Spec.VolumeName)
}

// DeleteClaim forgets a claim's edge.
func (g *Graph) DeleteClaim(c *corev1.PersistentVolumeClaim) {
	g.setClaim(claimKey{c.Namespace, c.Name}, "")
}

func (g *Graph) setClaim(key claimKey, volume string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.claimVolume == nil {
		g.claimVolume = map[claimKey]string{}
		g.volumeClaims = map[string]map[claimKey]struct{}{}
	}
	prev, had := g.claimVolume[key]
	if had && prev == volume {
		return
	}
	if had {
		delete(g.volumeClaims[prev], key)
		if len(g.volumeClaims[prev]) == 0 {
			delete(g.volumeClaims, prev)
		}
		delete(g.claimVolume, key)
	}
	if volume == "" {
		return
	}
	g.claimVolume[key] = volume
	if g.volumeClaims[volume] == nil {
		g.volumeClaims[volume] = map[claimKey]struct{}{}
	}
	g.volumeClaims[volume][key] = struct{}{}
}

// hasVolume reports whether a pod bound to node uses a claim bound to the
// PersistentVolume.
func (g *Graph) hasVolume(node, volume string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	refs := g.nodes[node]
	for k := range g.volumeClaims[volume] {
		if refs[ref{kind: pvcKind, namespace: k.namespace, name: k.name}] > 0 {
			return true
		}
	}
	return false
}

// ClaimHandler feeds a Graph from a persistentvolumeclaims informer: it
// satisfies the bus informer's Handler[*corev1.PersistentVolumeClaim].
type ClaimHandler struct{ g *Graph }

// ClaimHandler returns the graph's claims informer handler.
func (g *Graph) ClaimHandler() ClaimHandler { return ClaimHandler{g: g} }

// OnAdd records a claim.
func (h ClaimHandler) OnAdd(c *corev1.PersistentVolumeClaim) { h.g.SetClaim(c) }

// OnUpdate records a claim's (new) volume.
func (h ClaimHandler) OnUpdate(_, c *corev1.PersistentVolumeClaim) { h.g.SetClaim(c) }

// OnDelete forgets a claim.
func (h ClaimHandler) OnDelete(c *corev1.PersistentVolumeClaim) { h.g.DeleteClaim(c) }
