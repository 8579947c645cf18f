package certificates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// ApproverName is the approver's name, as upstream's --controllers knows it.
const ApproverName = "csrapproving"

// ReasonAutoApproved is the reason of the approver's Approved condition.
const ReasonAutoApproved = "AutoApproved"

// Groups the approver trusts when the server answers no
// SubjectAccessReviews.
const (
	mastersGroup       = "system:masters"
	bootstrappersGroup = "system:bootstrappers"
)

// The subresources of certificatesigningrequests whose create permission
// lets a requester have a kubelet client certificate approved: for its own
// node, or for any node.
const (
	selfNodeClient = "selfnodeclient"
	nodeClient     = "nodeclient"
)

// ErrNotAuthorized means a CSR was recognised as a kubelet's but its
// requester may not have it approved; it stays pending and is looked at
// again with backoff, in case the requester's permissions change.
var ErrNotAuthorized = errors.New("certificates: requester not authorized for auto-approval")

// ApproverConfig configures the approving controller.
type ApproverConfig struct {
	Client kubernetes.Interface
	CSRs   *informer.Informer[*certificatesv1.CertificateSigningRequest]
	// Nodes are the Node objects a kubelet serving CSR's names are checked
	// against: a node's pending serving CSRs are looked at again when its
	// Node appears or its addresses change.
	Nodes *informer.Informer[*corev1.Node]
	// Services, when given, tell the kubernetes Service's cluster IPs,
	// which no kubelet serving certificate may name (the API server's
	// names never may).
	Services *informer.Informer[*corev1.Service]
	// Now defaults to time.Now.
	Now     func() time.Time
	Options controllers.Options
}

func (c *ApproverConfig) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("certificates: Client is required")
	case c.CSRs == nil:
		return errors.New("certificates: the CertificateSigningRequests informer is required")
	case c.Nodes == nil:
		return errors.New("certificates: the Nodes informer is required")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return nil
}

// nodeGetter is the part of the Nodes' cache the approver reads.
type nodeGetter interface {
	Get(namespace, name string) (*corev1.Node, bool)
}

// serviceGetter is the part of the Services' cache the approver reads.
type serviceGetter interface {
	Get(namespace, name string) (*corev1.Service, bool)
}

// csrLister lists the CSRs' cache.
type csrLister interface {
	List() []*certificatesv1.CertificateSigningRequest
}

type approver struct {
	client kubernetes.Interface
	csrs   csrGetter
	nodes  nodeGetter
	// services is nil when the approver has no Services' cache.
	services serviceGetter
	now      func() time.Time
	log      *slog.Logger
}

// NewApprover builds the approving controller and registers its handlers
// on the CSRs' and the Nodes' informers: call it before they run.
func NewApprover(cfg ApproverConfig) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &approver{client: cfg.Client, csrs: cfg.CSRs, nodes: cfg.Nodes, now: cfg.Now, log: cfg.Options.Logger.With("controller", ApproverName)}
	if cfg.Services != nil {
		a.services = cfg.Services
	}
	c := controllers.New(ApproverName, a, cfg.Options)
	enqueueCSRs(c, cfg.CSRs)
	cfg.Nodes.AddHandler(requeueServingCSRs(cfg.CSRs, c.Enqueue))
	return c, nil
}

// requeueServingCSRs is the Nodes' handler that queues the pending kubelet
// serving CSRs a node asked for when its Node appears or its addresses
// change: a kubelet may ask before the controller knows its Node or the
// addresses it names, and its CSR is approved once they are known.
func requeueServingCSRs(csrs csrLister, enqueue func(controllers.Request)) informer.HandlerFuncs[*corev1.Node] {
	requeue := func(node *corev1.Node) {
		for _, name := range pendingServingCSRs(csrs.List(), node.Name) {
			enqueue(controllers.Request{Name: name})
		}
	}
	return informer.HandlerFuncs[*corev1.Node]{
		AddFunc: requeue,
		UpdateFunc: func(old, node *corev1.Node) {
			if !equality.Semantic.DeepEqual(old.Status.Addresses, node.Status.Addresses) {
				requeue(node)
			}
		},
	}
}

// pendingServingCSRs returns the names of the CSRs among csrs for the
// kubelet-serving signer that node asked for and that are neither
// approved, denied nor signed.
func pendingServingCSRs(csrs []*certificatesv1.CertificateSigningRequest, node string) []string {
	var names []string
	for _, csr := range csrs {
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != nodeUserPrefix+node ||
			len(csr.Status.Certificate) > 0 || hasTrue(csr, certificatesv1.CertificateApproved) || hasTrue(csr, certificatesv1.CertificateDenied) {
			continue
		}
		names = append(names, csr.Name)
	}
	return names
}

// Reconcile approves CSR req.Name when it is a kubelet's pending request
// its requester may have approved: a client certificate after a
// SubjectAccessReview, a serving certificate when the node asked for it
// and it names only the node's own names and addresses.
func (a *approver) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	csr, ok := a.csrs.Get("", req.Name)
	if !ok || len(csr.Status.Certificate) > 0 || hasTrue(csr, certificatesv1.CertificateApproved) || hasTrue(csr, certificatesv1.CertificateDenied) {
		return controllers.Result{}, nil
	}
	x509cr, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(fmt.Errorf("unable to parse csr %q: %w", csr.Name, err))
	}
	self := csr.Spec.Username == x509cr.Subject.CommonName
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if ValidateKubeletClient(x509cr, csr.Spec.Usages) != nil {
			return controllers.Result{}, nil
		}
		// As upstream: a node's own request may pass as selfnodeclient,
		// anyone's as nodeclient.
		tried := []string{nodeClient}
		if self {
			tried = []string{selfNodeClient, nodeClient}
		}
		for _, sub := range tried {
			ok, err := a.authorize(ctx, csr, sub)
			if err != nil {
				return controllers.Result{}, err
			}
			if ok {
				msg := "Auto approving kubelet client certificate after SubjectAccessReview."
				if sub == selfNodeClient {
					msg = "Auto approving self kubelet client certificate after SubjectAccessReview."
				}
				return controllers.Result{}, a.approve(ctx, csr, msg)
			}
		}
		return controllers.Result{}, fmt.Errorf("csr %s recognized as %v: %w", csr.Name, tried, ErrNotAuthorized)
	case certificatesv1.KubeletServingSignerName:
		if ValidateKubeletServing(x509cr, csr.Spec.Usages) != nil {
			return controllers.Result{}, nil
		}
		if !self || !slices.Contains(csr.Spec.Groups, nodesGroup) {
			// Who asked never changes: no retry.
			return controllers.Result{}, controllers.Terminal(fmt.Errorf("csr %s is a serving certificate of %s asked for by %s: %w",
				csr.Name, x509cr.Subject.CommonName, csr.Spec.Username, ErrNotAuthorized))
		}
		// Only the node's own names and addresses: else a node could have
		// the cluster CA vouch for it as the API server or another node.
		// Left pending (for an admin, as upstream) rather than denied: the
		// Node or its addresses may not be known yet, and its handler
		// queues the CSR again when they are.
		nodeName := strings.TrimPrefix(x509cr.Subject.CommonName, nodeUserPrefix)
		node, ok := a.nodes.Get("", nodeName)
		if !ok {
			a.log.Info("not approving kubelet serving csr: its Node is not known (yet); looking again when it appears",
				"csr", csr.Name, "node", nodeName)
			return controllers.Result{}, nil
		}
		if err := ValidateNotAPIServer(x509cr, a.apiServerIPs()); err != nil {
			a.log.Info("not approving kubelet serving csr: it names the API server", "csr", csr.Name, "node", nodeName, "reason", err)
			return controllers.Result{}, nil
		}
		if err := ValidateKubeletServingNames(x509cr, node); err != nil {
			a.log.Info("not approving kubelet serving csr: it names what is not its node's; looking again when the node's addresses change",
				"csr", csr.Name, "node", nodeName, "reason", err)
			return controllers.Result{}, nil
		}
		return controllers.Result{}, a.approve(ctx, csr, "Auto approving kubelet serving certificate requested by the node itself.")
	}
	return controllers.Result{}, nil
}

// authorize asks whether the CSR's requester may create
// certificatesigningrequests/<subresource>. When the server answers no
// SubjectAccessReviews, the requester's groups decide: system:masters may
// have any kubelet client certificate approved, system:bootstrappers too,
// and a node (or system:nodes member) its own.
func (a *approver) authorize(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error) {
	extra := make(map[string]authzv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{
			User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
			ResourceAttributes: &authzv1.ResourceAttributes{
				Group: certificatesv1.GroupName, Version: "*", Resource: "certificatesigningrequests",
				Subresource: subresource, Verb: "create",
			},
		},
	}, metav1.CreateOptions{})
	switch {
	case err == nil:
		return sar.Status.Allowed, nil
	case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
		groups := csr.Spec.Groups
		switch {
		case slices.Contains(groups, mastersGroup), slices.Contains(groups, bootstrappersGroup):
			return true, nil
		case subresource == selfNodeClient:
			return true, nil // the requester is the node the certificate names
		}
		return false, nil
	default:
		return false, fmt.Errorf("asking whether %s may create certificatesigningrequests/%s: %w", csr.Spec.Username, subresource, err)
	}
}

// approve adds an Approved condition to csr through the approval
// subresource.
func (a *approver) approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, message string) error {
	csr = csr.DeepCopy()
	now := metav1.NewTime(a.now())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonAutoApproved,
		Message: message, LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := a.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approving csr %s: %w", csr.Name, err)
	}
	a.log.Debug("approved csr", "csr", csr.Name, "signer", csr.Spec.SignerName, "requester", csr.Spec.Username)
	return nil
}

// apiServerIPs are the cluster IPs of the kubernetes Service in default
// (none without a Services' cache or before the Service exists).
func (a *approver) apiServerIPs() []netip.Addr {
	if a.services == nil {
		return nil
	}
	svc, ok := a.services.Get(metav1.NamespaceDefault, "kubernetes")
	if !ok {
		return nil
	}
	var ips []netip.Addr
	for _, s := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if ip, err := netip.ParseAddr(s); err == nil {
			ips = append(ips, ip.Unmap())
		}
	}
	return ips
}
