package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name.
const Name = "nodeipam"

// EventCIDRNotAvailable is upstream's event reason for a node the cluster
// CIDR has no subnet left for.
const EventCIDRNotAvailable = "CIDRNotAvailable"

// Defaults.
const (
	DefaultClusterCIDR  = "10.244.0.0/16"
	DefaultNodeMaskSize = 24 // IPv4; IPv6 clusters default to /64
)

// Config configures the controller.
type Config struct {
	Client kubernetes.Interface
	Nodes  *informer.Informer[*corev1.Node]
	// ClusterCIDR is cut into node subnets (default DefaultClusterCIDR).
	ClusterCIDR string
	// NodeMaskSize is each node's prefix length (default 24, or 64 for an
	// IPv6 cluster CIDR). At most 2^16 subnets.
	NodeMaskSize int
	// Recorder, when set, receives a CIDRNotAvailable event for each node
	// left without a subnet (once, until a subnet may have come free).
	Recorder record.EventRecorder
	Options  controllers.Options
}

func (c *Config) validate() (cidrSet, error) {
	switch {
	case c.Client == nil:
		return cidrSet{}, errors.New("nodeipam: Client is required")
	case c.Nodes == nil:
		return cidrSet{}, errors.New("nodeipam: the Nodes informer is required")
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultClusterCIDR
	}
	if c.NodeMaskSize == 0 {
		c.NodeMaskSize = DefaultNodeMaskSize
		if p, err := netip.ParsePrefix(c.ClusterCIDR); err == nil && p.Addr().Is6() {
			c.NodeMaskSize = 64
		}
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return newCIDRSet(c.ClusterCIDR, c.NodeMaskSize)
}

// nodeLister is the part of the Nodes cache the reconciler reads.
type nodeLister interface {
	Get(namespace, name string) (*corev1.Node, bool)
	List() []*corev1.Node
}

type reconciler struct {
	client kubernetes.Interface
	nodes  nodeLister
	set    cidrSet
	log    *slog.Logger
	ctrl   *controllers.Controller

	mu sync.Mutex
	// pending holds the subnets this controller gave nodes whose cache copy
	// does not show them yet, so that no other node gets them meanwhile and
	// a retry gives the node the same one.
	pending map[string]netip.Prefix
	// full is set when a pick found no free subnet, and cleared (waking
	// the nodes that wait) when one may have come free.
	full bool
	// told holds the nodes given a CIDRNotAvailable event since full was
	// last cleared.
	told     map[string]struct{}
	recorder record.EventRecorder
}

// New builds the controller and registers its handlers on the Nodes
// informer: call it before the informer runs. Run the result while leading.
func New(cfg Config) (*controllers.Controller, error) {
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	r := newReconciler(cfg.Client, cfg.Nodes, set, cfg.Options.Logger)
	r.recorder = cfg.Recorder
	r.ctrl = controllers.New(Name, r, cfg.Options)
	cfg.Nodes.AddHandler(informer.HandlerFuncs[*corev1.Node]{
		AddFunc:    func(n *corev1.Node) { r.enqueueIfNeeded(n) },
		UpdateFunc: r.onUpdate,
		DeleteFunc: r.onDelete,
	})
	return r.ctrl, nil
}

func newReconciler(client kubernetes.Interface, nodes nodeLister, set cidrSet, log *slog.Logger) *reconciler {
	return &reconciler{client: client, nodes: nodes, set: set, log: log.With("controller", Name), pending: map[string]netip.Prefix{}, told: map[string]struct{}{}}
}

func hasCIDR(n *corev1.Node) bool { return n.Spec.PodCIDR != "" || len(n.Spec.PodCIDRs) > 0 }

func (r *reconciler) enqueueIfNeeded(n *corev1.Node) {
	r.mu.Lock()
	_, isPending := r.pending[n.Name]
	r.mu.Unlock()
	if !hasCIDR(n) || isPending {
		r.ctrl.Enqueue(controllers.Request{Name: n.Name})
	}
}

// onUpdate queues a node that still needs a subnet. The API server never
// lets a node's subnet change, but the cache can: when it relists, a node
// deleted and created again under the same name arrives as one update,
// and the subnet the old node held is free.
func (r *reconciler) onUpdate(old, n *corev1.Node) {
	if hasCIDR(old) && !slices.Equal(nodeCIDRs(old), nodeCIDRs(n)) {
		r.subnetMayBeFree()
	}
	r.enqueueIfNeeded(n)
}

func (r *reconciler) onDelete(n *corev1.Node) {
	r.ctrl.Enqueue(controllers.Request{Name: n.Name})
	r.subnetMayBeFree()
}

// subnetMayBeFree is told that a subnet may have come free. If the last
// pick found none, it clears that and queues every node still waiting.
func (r *reconciler) subnetMayBeFree() {
	r.mu.Lock()
	wake := r.full
	r.full = false
	clear(r.told)
	r.mu.Unlock()
	if !wake {
		return
	}
	for _, other := range r.nodes.List() {
		if !hasCIDR(other) {
			r.ctrl.Enqueue(controllers.Request{Name: other.Name})
		}
	}
}

// Reconcile gives the node a subnet if it has none.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	node, ok := r.nodes.Get("", req.Name)
	if !ok {
		r.release(req.Name, nil)
		return controllers.Result{}, nil
	}
	if hasCIDR(node) {
		r.release(req.Name, node)
		return controllers.Result{}, nil
	}
	cidr, err := r.reserve(req.Name)
	if errors.Is(err, ErrFull) {
		// Not retried: whatever may free a subnet (a node deleted, a
		// reservation dropped) queues the waiting nodes again
		// (subnetMayBeFree).
		r.tell(node)
		return controllers.Result{}, nil
	}
	if err != nil {
		return controllers.Result{}, err
	}
	patch, err := json.Marshal(map[string]any{
		// Pinning the version makes the write fail if the node changed
		// (and perhaps got a subnet) since the cache saw it.
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()}},
	})
	if err != nil {
		return controllers.Result{}, err
	}
	_, err = r.client.CoreV1().Nodes().Patch(ctx, req.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.release(req.Name, nil)
		return controllers.Result{}, nil
	case err != nil:
		// Keep the reservation: the retry offers the node the same subnet.
		return controllers.Result{}, fmt.Errorf("assigning %s to node %s: %w", cidr, req.Name, err)
	}
	r.log.Debug("assigned a pod CIDR", "node", req.Name, "podCIDR", cidr.String())
	return controllers.Result{}, nil
}

// reserve returns the node's pending subnet, or picks a free one. Once
// a pick has found none it answers ErrFull without looking again until
// subnetMayBeFree is called: every update of every node left without a
// subnet comes here (their status, every few seconds), and each look
// walks all nodes.
func (r *reconciler) reserve(name string) (netip.Prefix, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pending[name]; ok {
		return p, nil
	}
	if r.full {
		return netip.Prefix{}, ErrFull
	}
	var used []netip.Prefix
	nodes := r.nodes.List()
	for _, n := range nodes {
		used = append(used, nodeCIDRs(n)...)
	}
	for _, p := range r.pending {
		used = append(used, p)
	}
	p, err := r.set.allocate(used)
	if err != nil {
		r.full = true
		r.log.Warn("no subnet left in the cluster CIDR: nodes without one wait until a node gives its subnet up",
			"node", name, "clusterCIDR", r.set.cluster.String(), "nodes", len(nodes))
		return p, err
	}
	r.pending[name] = p
	return p, nil
}

// tell records upstream's CIDRNotAvailable event on a node left without a
// subnet, once per node until a subnet may have come free.
func (r *reconciler) tell(n *corev1.Node) {
	if r.recorder == nil {
		return
	}
	r.mu.Lock()
	_, done := r.told[n.Name]
	r.told[n.Name] = struct{}{}
	r.mu.Unlock()
	if !done {
		r.recorder.Eventf(n, corev1.EventTypeNormal, EventCIDRNotAvailable, "Node %s status is now: %s", n.Name, EventCIDRNotAvailable)
	}
}

// release forgets the node's reservation. When node (nil: gone) does not
// hold the reserved subnet, that subnet is free again.
func (r *reconciler) release(name string, node *corev1.Node) {
	r.mu.Lock()
	p, had := r.pending[name]
	delete(r.pending, name)
	r.mu.Unlock()
	if had && (node == nil || !slices.Contains(nodeCIDRs(node), p)) {
		r.subnetMayBeFree()
	}
}

// nodeCIDRs returns the subnets a node holds.
func nodeCIDRs(n *corev1.Node) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}
