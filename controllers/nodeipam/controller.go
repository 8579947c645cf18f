package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name.
const Name = "nodeipam"

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
	Options      controllers.Options
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
	full    bool // an allocation failed: a deleted node should wake the others
}

// New builds the controller and registers its handlers on the Nodes
// informer: call it before the informer runs. Run the result while leading.
func New(cfg Config) (*controllers.Controller, error) {
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	r := newReconciler(cfg.Client, cfg.Nodes, set, cfg.Options.Logger)
	r.ctrl = controllers.New(Name, r, cfg.Options)
	cfg.Nodes.AddHandler(informer.HandlerFuncs[*corev1.Node]{
		AddFunc: func(n *corev1.Node) { r.enqueueIfNeeded(n) },
		UpdateFunc: func(_, n *corev1.Node) {
			r.enqueueIfNeeded(n)
		},
		DeleteFunc: r.onDelete,
	})
	return r.ctrl, nil
}

func newReconciler(client kubernetes.Interface, nodes nodeLister, set cidrSet, log *slog.Logger) *reconciler {
	return &reconciler{client: client, nodes: nodes, set: set, log: log.With("controller", Name), pending: map[string]netip.Prefix{}}
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

func (r *reconciler) onDelete(n *corev1.Node) {
	r.ctrl.Enqueue(controllers.Request{Name: n.Name})
	r.mu.Lock()
	wake := r.full
	r.full = false
	r.mu.Unlock()
	if wake {
		for _, other := range r.nodes.List() {
			if !hasCIDR(other) {
				r.ctrl.Enqueue(controllers.Request{Name: other.Name})
			}
		}
	}
}

// Reconcile gives the node a subnet if it has none.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	node, ok := r.nodes.Get("", req.Name)
	if !ok || hasCIDR(node) {
		r.release(req.Name)
		return controllers.Result{}, nil
	}
	cidr, err := r.reserve(req.Name)
	if errors.Is(err, ErrFull) {
		r.log.Warn("no subnet left for a node", "node", req.Name, "clusterCIDR", r.set.cluster.String())
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
		r.release(req.Name)
		return controllers.Result{}, nil
	case err != nil:
		// Keep the reservation: the retry offers the node the same subnet.
		return controllers.Result{}, fmt.Errorf("assigning %s to node %s: %w", cidr, req.Name, err)
	}
	r.log.Debug("assigned a pod CIDR", "node", req.Name, "podCIDR", cidr.String())
	return controllers.Result{}, nil
}

// reserve returns the node's pending subnet, or picks a free one.
func (r *reconciler) reserve(name string) (netip.Prefix, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pending[name]; ok {
		return p, nil
	}
	var used []netip.Prefix
	for _, n := range r.nodes.List() {
		used = append(used, nodeCIDRs(n)...)
	}
	for _, p := range r.pending {
		used = append(used, p)
	}
	p, err := r.set.allocate(used)
	if err != nil {
		r.full = true
		return p, err
	}
	r.pending[name] = p
	return p, nil
}

func (r *reconciler) release(name string) {
	r.mu.Lock()
	delete(r.pending, name)
	r.mu.Unlock()
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
