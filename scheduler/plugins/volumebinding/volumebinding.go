// Package volumebinding takes a pod's PersistentVolumeClaims into account,
// as upstream's VolumeBinding plugin:
//   - PreFilter rejects a pod whose claims are missing, being deleted,
//     lost, or unbound with an Immediate class (the PV binder binds those
//     first), and sorts the others into bound claims and unbound
//     WaitForFirstConsumer claims;
//   - Filter lets a node pass when every bound claim's PersistentVolume
//     has a node affinity the node meets, and every unbound
//     WaitForFirstConsumer claim either matches an available
//     PersistentVolume of its class that the node may use (a local volume
//     made by hand, say; each volume serves one claim) or can be
//     provisioned there (its class has a provisioner whose allowed
//     topologies include the node), and no other node was selected for it
//     already;
//   - Reserve assumes, in the scheduler's cache, the chosen node as the
//     selected node of each such claim, so the next cycles see it;
//   - PreBind (binder.go) writes volume.kubernetes.io/selected-node on the
//     claims through the API, for the PV binder (which then binds a
//     matching volume usable on that node) or the provisioner, and waits, bounded by
//     the bind timeout, until the PV binder has bound them; only then is
//     the pod bound. On failure it takes the annotation off again and the
//     pod is retried.
//
// Not done, compared with upstream: the scheduler does not pre-bind the
// volume it matched (it leaves the choice among the node's matching
// volumes to the PV binder), storage capacity, and scoring.
package volumebinding

import (
	"context"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/volume"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "VolumeBinding"

// Reasons, as upstream's (the node affinity conflict in its older, more
// widely known wording).
const (
	ErrReasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
	ErrReasonNodeConflict     = "node(s) had volume node affinity conflict"
	ErrReasonPVNotExist       = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
)

// NotSupportedProvisioner is the provisioner of classes for volumes that
// are only ever created by hand.
const NotSupportedProvisioner = "kubernetes.io/no-provisioner"

const stateKey framework.StateKey = "PreFilter" + Name

// DefaultBindTimeout bounds PreBind's wait for the claims to be bound
// (upstream's default is 600s; a node-local provisioner answers in
// seconds).
const DefaultBindTimeout = 60 * time.Second

// Args are the plugin's arguments (VolumeBindingArgs).
type Args struct {
	// BindTimeoutSeconds bounds the wait in PreBind (default 60).
	BindTimeoutSeconds *int64 `json:"bindTimeoutSeconds,omitempty"`
	// Shape is upstream's storage capacity scoring shape; accepted and
	// ignored (kubebus does not score storage capacity).
	Shape []map[string]int32 `json:"shape,omitempty"`
}

// VolumeBinding is the plugin.
type VolumeBinding struct {
	bindTimeout  time.Duration
	pollInterval time.Duration
}

var (
	_ framework.PreFilterPlugin  = (*VolumeBinding)(nil)
	_ framework.FilterPlugin     = (*VolumeBinding)(nil)
	_ framework.ReservePlugin    = (*VolumeBinding)(nil)
	_ framework.PreBindPlugin    = (*VolumeBinding)(nil)
	_ framework.PreBindPreFlight = (*VolumeBinding)(nil)
)

// New returns the plugin.
func New(a Args) (*VolumeBinding, error) {
	pl := &VolumeBinding{bindTimeout: DefaultBindTimeout, pollInterval: 200 * time.Millisecond}
	if a.BindTimeoutSeconds != nil {
		if *a.BindTimeoutSeconds <= 0 {
			return nil, fmt.Errorf("bindTimeoutSeconds: %d must be positive", *a.BindTimeoutSeconds)
		}
		pl.bindTimeout = time.Duration(*a.BindTimeoutSeconds) * time.Second
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (pl *VolumeBinding) Name() string { return Name }

// boundClaim is a bound claim and what its volume demands of a node.
type boundClaim struct {
	claim    *v1.PersistentVolumeClaim
	pvFound  bool
	affinity *framework.NodeSelector // nil: any node
}

// delayedClaim is an unbound WaitForFirstConsumer claim.
type delayedClaim struct {
	claim *v1.PersistentVolumeClaim
	// selectedNode is the node already chosen for it ("" for none).
	selectedNode string
	// provisionable is false when the class cannot provision.
	provisionable bool
	// topologies are the class's allowed topologies (nil: any node).
	topologies []v1.TopologySelectorTerm
	// volumes are the PersistentVolumes of its class, to match.
	volumes []*v1.PersistentVolume
}

// stateData is what PreFilter computed, and what Reserve assumed.
type stateData struct {
	bound   []boundClaim
	delayed []delayedClaim
	// reserved are the claims Reserve assumed the selected node of (and
	// PreBind writes); waitFor are all claims PreBind waits on.
	reserved []*v1.PersistentVolumeClaim
	waitFor  []*v1.PersistentVolumeClaim
}

// Clone implements framework.StateData: nothing in it is mutated after
// PreFilter except by Reserve, which runs once, on the original.
func (d *stateData) Clone() framework.StateData { return d }

// claimName returns the claim a volume uses ("" for none) and whether it
// is a generic ephemeral volume's.
func claimName(pod *v1.Pod, vol *v1.Volume) (string, bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, false
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name, true
	}
	return "", false
}

// IsBound reports whether a claim is bound to a volume: it names one and
// the binder has finished (phase Bound, or upstream's bind-completed
// annotation).
func IsBound(c *v1.PersistentVolumeClaim) bool {
	if c.Spec.VolumeName == "" {
		return false
	}
	_, completed := c.Annotations[volume.AnnBindCompleted]
	return completed || c.Status.Phase == v1.ClaimBound
}

// PreFilter implements framework.PreFilterPlugin.
func (pl *VolumeBinding) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, snap *framework.Snapshot) (*framework.PreFilterResult, *framework.Status) {
	d := &stateData{}
	has := false
	immediate := false
	for i := range pod.Spec.Volumes {
		name, ephemeral := claimName(pod, &pod.Spec.Volumes[i])
		if name == "" {
			continue
		}
		has = true
		c, ok := snap.Claim(pod.Namespace, name)
		switch {
		case !ok && ephemeral:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name))
		case !ok:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		case c.Status.Phase == v1.ClaimLost:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", name, c.Spec.VolumeName))
		case c.DeletionTimestamp != nil:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if IsBound(c) {
			b := boundClaim{claim: c}
			if pv, ok := snap.Volume(c.Spec.VolumeName); ok {
				b.pvFound = true
				if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
					b.affinity = framework.NewNodeSelector(na.Required)
				}
			}
			d.bound = append(d.bound, b)
			continue
		}
		class, _ := snap.StorageClass(volume.GetPersistentVolumeClaimClass(c))
		if c.Spec.VolumeName != "" || !delayed(class) {
			// Pre-bound and Immediate claims are the PV binder's to bind.
			immediate = true
			continue
		}
		dc := delayedClaim{claim: c, selectedNode: c.Annotations[volume.AnnSelectedNode]}
		dc.provisionable = class.Provisioner != "" && class.Provisioner != NotSupportedProvisioner
		dc.topologies = class.AllowedTopologies
		dc.volumes = snap.VolumesOfClass(class.Name)
		d.delayed = append(d.delayed, dc)
	}
	if !has {
		return nil, framework.NewStatus(framework.Skip)
	}
	if immediate {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
	}
	state.Write(stateKey, d)
	return nil, nil
}

// delayed reports whether a class binds when the first pod is scheduled.
func delayed(class *storagev1.StorageClass) bool {
	return class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeBinding) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	d, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	var reasons []string
	pvFound, affinityOK := true, true
	for _, b := range d.bound {
		switch {
		case !b.pvFound:
			pvFound = false
		case b.affinity != nil && !b.affinity.Match(node):
			affinityOK = false
		}
	}
	if !affinityOK {
		reasons = append(reasons, ErrReasonNodeConflict)
	}
	fits, err := fitsDelayed(d.delayed, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if !fits {
		reasons = append(reasons, ErrReasonBindConflict)
	}
	if !pvFound {
		reasons = append(reasons, ErrReasonPVNotExist)
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	return nil
}

// fitsDelayed reports whether every unbound WaitForFirstConsumer claim
// matches a volume node may use (no volume serving two claims; the
// smallest requests choose first, as upstream) or can be provisioned on
// node.
func fitsDelayed(claims []delayedClaim, node *v1.Node) (bool, error) {
	if len(claims) == 0 {
		return true, nil
	}
	order := make([]int, len(claims))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		qa := claims[order[a]].claim.Spec.Resources.Requests[v1.ResourceStorage]
		qb := claims[order[b]].claim.Spec.Resources.Requests[v1.ResourceStorage]
		return qa.Cmp(qb) < 0
	})
	chosen := map[string]*v1.PersistentVolume{}
	for _, i := range order {
		c := claims[i]
		if c.selectedNode != "" && c.selectedNode != node.Name {
			return false, nil
		}
		pv, err := volume.FindMatchingVolume(c.claim, c.volumes, node, chosen, true, false)
		if err != nil {
			return false, err
		}
		if pv != nil {
			chosen[pv.Name] = pv
			continue
		}
		if !c.provisionable || !matchTopologies(c.topologies, node.Labels) {
			return false, nil
		}
	}
	return true, nil
}

// matchTopologies reports whether labels meet any of the terms (all of a
// term's expressions); no terms match everything.
func matchTopologies(terms []v1.TopologySelectorTerm, labels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			v, has := labels[e.Key]
			if !has || !contains(e.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Reserve implements framework.ReservePlugin: the chosen node becomes the
// selected node of the pod's unbound WaitForFirstConsumer claims in the
// cache.
func (pl *VolumeBinding) Reserve(_ context.Context, state *framework.CycleState, _ *v1.Pod, node string, snap *framework.Snapshot) *framework.Status {
	d, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil {
		return nil // the pod has no claims (PreFilter skipped)
	}
	d.reserved, d.waitFor = nil, nil
	for _, dc := range d.delayed {
		c := dc.claim
		if dc.selectedNode == "" {
			c = c.DeepCopy()
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[volume.AnnSelectedNode] = node
			snap.AssumeClaim(c)
			d.reserved = append(d.reserved, c)
		}
		d.waitFor = append(d.waitFor, c)
	}
	return nil
}

// Unreserve implements framework.ReservePlugin: it forgets the assumed
// selected nodes.
func (pl *VolumeBinding) Unreserve(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ string, snap *framework.Snapshot) {
	d, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil {
		return
	}
	for _, c := range d.reserved {
		if cur, ok := snap.Claim(c.Namespace, c.Name); ok && cur == c {
			snap.ForgetAssumedClaim(c.Namespace, c.Name)
		}
	}
}
