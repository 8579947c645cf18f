package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/bus/lifecycle"
)

// PodGetter reads one pod as it is stored now. A missing pod is an
// apierrors NotFound.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// NodeGetter reads one Node as it is stored now. A missing node is an
// apierrors NotFound.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// NodeRestriction is upstream's NodeRestriction plugin: it limits what a
// kubelet (a user system:node:NAME in system:nodes) may write to what
// concerns its own node.
//
//   - pods: create only mirror pods bound to itself, owned by its Node and
//     referencing no ServiceAccount, secret, ConfigMap, ClusterTrustBundle
//     or PersistentVolumeClaim; update only the status of pods bound to
//     itself, without touching their labels; delete and evict only pods
//     bound to itself;
//   - nodes: write only its own Node, never its taints after creation,
//     and no kubernetes.io or k8s.io label outside the kubelet's set;
//   - leases: only its own, in kube-node-lease; csinodes: only its own;
//   - serviceaccounts/token: only tokens bound to a pod on itself, and
//     only for an audience that pod uses or that the authorizer lets the
//     node request (upstream's ServiceAccountNodeAudienceRestriction, on
//     by default since 1.33);
//   - persistentvolumeclaims: only the status, and of it only capacity,
//     conditions and allocated resources;
//   - certificatesigningrequests to the kubelet signers: only for its own
//     name.
//
// Everything else (events, ...) is left to the authorizer.
//
// Beyond upstream, it also restricts the proxies (user system:kube-proxy),
// whose RBAC role may write Leases in kube-node-lease so that each records
// what it programmed: they may write only Leases named kube-proxy-*, never
// a kubelet's heartbeat, which would keep a dead node looking alive.
type NodeRestriction struct {
	Pods PodGetter
	// Nodes, when set, checks that a mirror pod's owner reference carries
	// the UID of the node.
	Nodes NodeGetter
	// Authorizer, when set, may let a node request a token for an audience
	// its pod does not use (verb request-serviceaccounts-token-audience).
	Authorizer auth.Authorizer
}

var _ auth.Admitter = NodeRestriction{}

// Admit implements auth.Admitter.
func (p NodeRestriction) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	switch req.Operation {
	case auth.Create, auth.Update, auth.Delete:
	default:
		return nil
	}
	u := req.Attributes.User
	if u.Name == ProxyUser && req.Attributes.APIGroup == coordinationv1.GroupName && req.Attributes.Resource == "leases" {
		return admitProxyLease(req)
	}
	if !strings.HasPrefix(u.Name, auth.NodeUserPrefix) || !u.InGroup(auth.NodesGroup) {
		return nil
	}
	nodeName, ok := u.NodeName()
	if !ok {
		return forbidRequest(req, fmt.Errorf("could not determine node from user %q", u.Name))
	}
	a := req.Attributes
	switch {
	case a.APIGroup == "" && a.Resource == "pods":
		switch req.Subresource {
		case "":
			return p.admitPod(ctx, nodeName, req)
		case "status":
			return admitPodStatus(nodeName, req)
		case "eviction":
			return p.admitPodEviction(ctx, nodeName, req)
		default:
			return forbidRequest(req, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", req.Subresource))
		}
	case a.APIGroup == "" && a.Resource == "nodes":
		return admitNode(nodeName, req)
	case a.APIGroup == "" && a.Resource == "serviceaccounts":
		return p.admitServiceAccountToken(ctx, nodeName, req)
	case a.APIGroup == coordinationv1.GroupName && a.Resource == "leases":
		return admitLease(nodeName, req)
	case a.APIGroup == "storage.k8s.io" && a.Resource == "csinodes":
		return admitOwnNamed(nodeName, req, "can only access CSINode with the same name as the requesting node")
	case a.APIGroup == "" && a.Resource == "persistentvolumeclaims":
		if req.Subresource != "status" {
			return forbidRequest(req, errors.New("may only update PVC status"))
		}
		return admitPVCStatus(nodeName, req)
	case a.APIGroup == certificatesv1.GroupName && a.Resource == "certificatesigningrequests":
		return admitNodeCSR(nodeName, req)
	}
	return nil
}

// admitPVCStatus lets a kubelet change only what it reports of a claim it
// mounts (the Node authorizer has checked that it does): capacity,
// conditions and the resources allocated by an expansion. Anything else,
// metadata included, is refused, as upstream refuses it.
func admitPVCStatus(nodeName string, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Update {
		return forbidRequest(req, fmt.Errorf("unexpected operation %q", req.Operation))
	}
	claim, ok := req.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	old, ok := req.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.OldObject))
	}
	if !equality.Semantic.DeepEqual(withoutNodeSettablePVCFields(old), withoutNodeSettablePVCFields(claim)) {
		return forbidRequest(req, fmt.Errorf("node %q is not allowed to update fields other than status.quantity and status.conditions", nodeName))
	}
	return nil
}

// withoutNodeSettablePVCFields is a copy of c without what a kubelet may
// change, and without the resourceVersion (an unconditional update leaves
// it empty) and the managed fields.
func withoutNodeSettablePVCFields(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	c = c.DeepCopy()
	c.ResourceVersion = ""
	c.ManagedFields = nil
	c.Status.Capacity = nil
	c.Status.Conditions = nil
	c.Status.AllocatedResources = nil
	c.Status.AllocatedResourceStatuses = nil
	return c
}

// admitNodeCSR lets a kubelet ask the kubelet signers only for its own
// name (CN system:node:NAME); requests to other signers are the signer's
// and the approver's business.
func admitNodeCSR(nodeName string, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Create {
		return nil
	}
	csr, ok := req.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	x509cr, err := pki.ParseCSR(csr.Spec.Request)
	if err != nil {
		return forbidRequest(req, fmt.Errorf("unable to parse csr: %w", err))
	}
	if x509cr.Subject.CommonName != auth.NodeUserPrefix+nodeName {
		return forbidRequest(req, fmt.Errorf("can only create a node CSR with CN=%s%s", auth.NodeUserPrefix, nodeName))
	}
	return nil
}

func (p NodeRestriction) admitPod(ctx context.Context, nodeName string, req *auth.AdmissionRequest) error {
	switch req.Operation {
	case auth.Create:
		return p.admitMirrorPodCreate(ctx, nodeName, req)
	case auth.Delete:
		pod, ok := req.OldObject.(*corev1.Pod)
		if !ok {
			var err error
			if pod, err = p.Pods.GetPod(ctx, req.Attributes.Namespace, req.Attributes.Name); err != nil {
				return podLookupError(req, err)
			}
		}
		if pod.Spec.NodeName != nodeName {
			return forbidRequest(req, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	default:
		return forbidRequest(req, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", req.Operation, nodeName))
	}
}

func (p NodeRestriction) admitMirrorPodCreate(ctx context.Context, nodeName string, req *auth.AdmissionRequest) error {
	pod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbidRequest(req, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName))
	}
	if pod.Spec.NodeName != nodeName {
		return forbidRequest(req, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
	}
	if err := p.checkNodeOwner(ctx, nodeName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return forbidRequest(req, err)
	}
	switch {
	case pod.Spec.ServiceAccountName != "":
		return forbidRequest(req, fmt.Errorf("node %q can not create pods that reference a service account", nodeName))
	case referencesSecrets(pod):
		return forbidRequest(req, fmt.Errorf("node %q can not create pods that reference secrets", nodeName))
	case referencesConfigMaps(pod):
		return forbidRequest(req, fmt.Errorf("node %q can not create pods that reference configmaps", nodeName))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ClusterTrustBundle != nil {
				return forbidRequest(req, fmt.Errorf("node %q can not create pods that reference clustertrustbundles", nodeName))
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		// A generic ephemeral volume is a claim too (<pod>-<volume>), which
		// the Node authorizer would then let the node read: refused, a
		// hardening beyond upstream, which checks only claims named.
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return forbidRequest(req, fmt.Errorf("node %q can not create pods that reference persistentvolumeclaims", nodeName))
		}
	}
	return nil
}

// checkNodeOwner requires a mirror pod to have exactly one owner, the
// controller reference to its Node.
func (p NodeRestriction) checkNodeOwner(ctx context.Context, nodeName string, pod *corev1.Pod) error {
	switch len(pod.OwnerReferences) {
	case 0:
		return fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName)
	case 1:
	default:
		return fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName)
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName)
	}
	if owner.Controller == nil || !*owner.Controller {
		return fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName)
	}
	if p.Nodes == nil {
		return nil
	}
	node, err := p.Nodes.GetNode(ctx, nodeName)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("error looking up node %s to verify uid: %w", nodeName, err)
	}
	if owner.UID != node.UID {
		return fmt.Errorf("node %s UID mismatch: expected %s got %s", nodeName, owner.UID, node.UID)
	}
	return nil
}

func admitPodStatus(nodeName string, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Update {
		return forbidRequest(req, fmt.Errorf("unexpected operation %q", req.Operation))
	}
	old, ok := req.OldObject.(*corev1.Pod)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.OldObject))
	}
	if old.Spec.NodeName != nodeName {
		return forbidRequest(req, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	pod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return forbidRequest(req, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	if !slices.Equal(claimStatusNames(old), claimStatusNames(pod)) {
		return forbidRequest(req, fmt.Errorf("node %q cannot update resource claim statues", nodeName))
	}
	return nil
}

// claimStatusNames is what a node may not change of a pod's resource claim
// statuses: their names and the claims they point at.
func claimStatusNames(pod *corev1.Pod) []string {
	var out []string
	for _, s := range pod.Status.ResourceClaimStatuses {
		claim := "\x00"
		if s.ResourceClaimName != nil {
			claim = *s.ResourceClaimName
		}
		out = append(out, s.Name, claim)
	}
	return out
}

func (p NodeRestriction) admitPodEviction(ctx context.Context, nodeName string, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Create {
		return forbidRequest(req, fmt.Errorf("unexpected operation %s", req.Operation))
	}
	eviction, ok := req.Object.(*policyv1.Eviction)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	name := req.Attributes.Name
	if name == "" {
		if eviction.Name == "" {
			return forbidRequest(req, errors.New("could not determine pod from request data"))
		}
		name = eviction.Name
	}
	pod, err := p.Pods.GetPod(ctx, req.Attributes.Namespace, name)
	if err != nil {
		return podLookupError(req, err)
	}
	if pod.Spec.NodeName != nodeName {
		return forbidRequest(req, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// podLookupError passes a NotFound through and refuses on any other error.
func podLookupError(req *auth.AdmissionRequest, err error) error {
	if apierrors.IsNotFound(err) {
		return err
	}
	return forbidRequest(req, err)
}

func admitNode(nodeName string, req *auth.AdmissionRequest) error {
	if req.Attributes.Name != nodeName {
		return forbidRequest(req, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, req.Attributes.Name))
	}
	switch req.Operation {
	case auth.Create:
		node, ok := req.Object.(*corev1.Node)
		if !ok {
			return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
		}
		if node.Spec.ConfigSource != nil {
			return forbidRequest(req, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if bad := forbiddenNodeLabels(modifiedLabels(node.Labels, nil)); len(bad) > 0 {
			return forbidRequest(req, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case auth.Update:
		node, ok := req.Object.(*corev1.Node)
		if !ok {
			return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
		}
		old, ok := req.OldObject.(*corev1.Node)
		if !ok {
			return forbidRequest(req, fmt.Errorf("unexpected type %T", req.OldObject))
		}
		if node.Spec.ConfigSource != nil && !equality.Semantic.DeepEqual(node.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbidRequest(req, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		if !equality.Semantic.DeepEqual(node.Spec.Taints, old.Spec.Taints) {
			return forbidRequest(req, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if bad := forbiddenNodeLabels(modifiedLabels(node.Labels, old.Labels)); len(bad) > 0 {
			return forbidRequest(req, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}

// modifiedLabels returns the keys whose presence or value differ.
func modifiedLabels(a, b map[string]string) sets.Set[string] {
	out := sets.New[string]()
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			out.Insert(k)
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			out.Insert(k)
		}
	}
	return out
}

// forbiddenNodeLabels returns, sorted, the modified labels a kubelet may
// not set: any under node-restriction.kubernetes.io, and any other
// kubernetes.io or k8s.io label outside the kubelet's own set.
func forbiddenNodeLabels(modified sets.Set[string]) []string {
	var out []string
	for key := range modified {
		ns := labelNamespace(key)
		if inDomain(ns, corev1.LabelNamespaceNodeRestriction) ||
			((inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io")) && !isKubeletLabel(key)) {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// isKubeletLabel reports whether the kubelet may set the label on its
// Node, as upstream's k8s.io/kubelet/pkg/apis.IsKubeletLabel.
func isKubeletLabel(key string) bool {
	switch key {
	case corev1.LabelHostname,
		corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
		corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
		corev1.LabelInstanceType, corev1.LabelInstanceTypeStable,
		corev1.LabelOSStable, corev1.LabelArchStable,
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch":
		return true
	}
	ns := labelNamespace(key)
	return inDomain(ns, corev1.LabelNamespaceSuffixKubelet) || inDomain(ns, corev1.LabelNamespaceSuffixNode)
}

// labelNamespace returns the prefix of a label key, or "".
func labelNamespace(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	return ns
}

// inDomain reports whether ns is domain or a subdomain of it.
func inDomain(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}

func (p NodeRestriction) admitServiceAccountToken(ctx context.Context, nodeName string, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Create || req.Subresource != "token" {
		return nil
	}
	tr, ok := req.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return forbidRequest(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbidRequest(req, errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return forbidRequest(req, errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.Pods.GetPod(ctx, req.Attributes.Namespace, ref.Name)
	if err != nil {
		return podLookupError(req, err)
	}
	if ref.UID != pod.UID {
		return forbidRequest(req, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return forbidRequest(req, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	return p.admitTokenAudience(ctx, req, tr.Spec.Audiences, pod)
}

// admitTokenAudience lets a node ask for a token only for an audience its
// pod uses, as upstream's ServiceAccountNodeAudienceRestriction (on by
// default since 1.33), judged on the audiences as the node sent them
// (admission runs before the TokenRequest API defaults them, as upstream's
// mutating admission does): at most one; none ("") or the one named must
// be the audience of a projected serviceAccountToken source of the pod
// ("" for a projection naming none, as the kube-api-access volume), or
// the authorizer must let the node request it (verb
// request-serviceaccounts-token-audience, the audience as the resource,
// the account as the name, in the pod's namespace). Upstream also accepts
// the audiences of CSI drivers' token requests; kubebus serves no
// CSIDriver.
func (p NodeRestriction) admitTokenAudience(ctx context.Context, req *auth.AdmissionRequest, audiences []string, pod *corev1.Pod) error {
	audience := ""
	switch len(audiences) {
	case 0:
	case 1:
		audience = audiences[0]
	default:
		return forbidRequest(req, errors.New("node may only request 0 or 1 audiences"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if sat := src.ServiceAccountToken; sat != nil && sat.Audience == audience {
				return nil
			}
		}
	}
	user := req.Attributes.User
	if p.Authorizer != nil {
		d, _, err := p.Authorizer.Authorize(ctx, auth.Attributes{User: user, Verb: "request-serviceaccounts-token-audience",
			ResourceRequest: true, APIVersion: "v1", Resource: audience, Namespace: req.Attributes.Namespace, Name: req.Attributes.Name})
		// An Allow counts even with an error, as upstream.
		if d == auth.Allow {
			return nil
		}
		if err != nil {
			return forbidRequest(req, fmt.Errorf("error authorizing %s to request tokens for audience %q: %w", user.Name, audience, err))
		}
	}
	return forbidRequest(req, fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, user.Name))
}

func admitLease(nodeName string, req *auth.AdmissionRequest) error {
	if req.Attributes.Namespace != corev1.NamespaceNodeLease {
		return forbidRequest(req, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	return admitOwnNamed(nodeName, req, "can only access node lease with the same name as the requesting node")
}

// ProxyUser is the identity of every node's proxy.
const ProxyUser = "system:kube-proxy"

// admitProxyLease lets a proxy write only the Leases proxies record in.
func admitProxyLease(req *auth.AdmissionRequest) error {
	name, err := writtenName(req)
	if err != nil {
		return err
	}
	if _, ok := lifecycle.ProxyNode(req.Attributes.Namespace, name); !ok {
		return forbidRequest(req, fmt.Errorf("a proxy can only write leases named %s<node> in the %q namespace", lifecycle.ProxyLeasePrefix, lifecycle.ProxyLeaseNamespace))
	}
	return nil
}

// writtenName is the name of the object a request writes: the created
// object's, else the request's.
func writtenName(req *auth.AdmissionRequest) (string, error) {
	if req.Operation != auth.Create {
		return req.Attributes.Name, nil
	}
	m, err := meta.Accessor(req.Object)
	if err != nil {
		return "", forbidRequest(req, errors.New("unable to access the object name"))
	}
	return m.GetName(), nil
}

// admitOwnNamed requires the object written to be named after the node.
func admitOwnNamed(nodeName string, req *auth.AdmissionRequest, msg string) error {
	name, err := writtenName(req)
	if err != nil {
		return err
	}
	if name != nodeName {
		return forbidRequest(req, errors.New(msg))
	}
	return nil
}

// referencesSecrets reports whether a pod names a Secret anywhere: image
// pull secrets, environment of any container, or a volume.
func referencesSecrets(pod *corev1.Pod) bool {
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return true
	}
	for _, c := range allContainers(pod) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil, s.AzureFile != nil && s.AzureFile.SecretName != "",
			s.CephFS != nil && s.CephFS.SecretRef != nil,
			s.Cinder != nil && s.Cinder.SecretRef != nil,
			s.FlexVolume != nil && s.FlexVolume.SecretRef != nil,
			s.RBD != nil && s.RBD.SecretRef != nil,
			s.ScaleIO != nil && s.ScaleIO.SecretRef != nil,
			s.ISCSI != nil && s.ISCSI.SecretRef != nil,
			s.StorageOS != nil && s.StorageOS.SecretRef != nil,
			s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
			return true
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}

// referencesConfigMaps reports whether a pod names a ConfigMap in the
// environment of any container or in a volume.
func referencesConfigMaps(pod *corev1.Pod) bool {
	for _, c := range allContainers(pod) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return true
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			return true
		}
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil {
				return true
			}
		}
	}
	return false
}

// allContainers returns the init, regular and ephemeral containers of a
// pod.
func allContainers(pod *corev1.Pod) []corev1.Container {
	out := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, e := range pod.Spec.EphemeralContainers {
		out = append(out, corev1.Container(e.EphemeralContainerCommon))
	}
	return out
}
