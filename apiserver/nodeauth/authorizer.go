package nodeauth

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/rbac"
)

// Authorizer is upstream's Node authorizer (AuthorizeNodeWithSelectors on,
// as by default since 1.32) reduced to what kubebus serves. For a kubelet
// (a user system:node:NAME in system:nodes) it allows
//   - get, list and watch of one named secret or configmap,
//   - get of a persistentvolumeclaim, and update or patch of its status,
//   - get of the persistentvolume such a claim is bound to,
//   - create of a serviceaccount's token,
//
// when a pod bound to the node references the object;
//   - get of a pod bound to the node, list and watch of pods only with the
//     field selector spec.nodeName=NAME, create and delete of pods
//     (mirror pods), update and patch of their status, create of
//     evictions (NodeRestriction keeps those to the node's own pods);
//   - get, list and watch of its own Node only (a list or watch by a
//     metadata.name field selector), create, update and patch of Nodes and
//     of their status (NodeRestriction keeps those to its own);
//   - its own Lease in kube-node-lease and its own CSINode;
//   - no VolumeAttachment (upstream allows those attached to the node);
//   - anything else the system:node rules (rbac.NodeRules) allow.
//
// Any other request of a node gets NoOpinion, with upstream's reason where
// upstream gives one, and so does every request of a user that is not an
// identified node, a member of system:nodes of another name included: the
// ClusterRole system:node is bound to nobody. It belongs in a Union
// before RBAC.
type Authorizer struct {
	g     *Graph
	rules []rbacv1.PolicyRule
}

var _ auth.Authorizer = (*Authorizer)(nil)

// NewAuthorizer returns the Node authorizer answering from g.
func NewAuthorizer(g *Graph) *Authorizer { return &Authorizer{g: g, rules: rbac.NodeRules()} }

// API groups of the resources the authorizer narrows.
const (
	coordinationGroup = "coordination.k8s.io"
	storageGroup      = "storage.k8s.io"
)

// Authorize implements auth.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	node, ok := attrs.User.NodeName()
	if !ok {
		if attrs.User.InGroup(auth.NodesGroup) && attrs.User.Name == auth.NodeUserPrefix {
			return auth.NoOpinion, fmt.Sprintf("unknown node for user %q", attrs.User.Name), nil
		}
		return auth.NoOpinion, "", nil
	}
	if attrs.ResourceRequest {
		switch attrs.APIGroup {
		case "":
			switch attrs.Resource {
			case "secrets":
				return a.authorizeRead(node, secretKind, attrs)
			case "configmaps":
				return a.authorizeRead(node, configMapKind, attrs)
			case "persistentvolumeclaims":
				if attrs.Subresource == "status" {
					return a.authorizeStatusUpdate(node, attrs)
				}
				return a.authorizeGet(node, attrs)
			case "serviceaccounts":
				return a.authorizeCreateToken(node, attrs)
			case "persistentvolumes":
				return a.authorizeVolume(node, attrs)
			case "pods":
				return a.authorizePod(node, attrs)
			case "nodes":
				return authorizeNode(node, attrs)
			}
		case coordinationGroup:
			if attrs.Resource == "leases" {
				return authorizeLease(node, attrs)
			}
		case storageGroup:
			switch attrs.Resource {
			case "csinodes":
				return authorizeCSINode(node, attrs)
			case "volumeattachments":
				// Upstream allows the attachments to the node through its
				// graph; this graph has no such edge (kubebus serves no
				// VolumeAttachments), so the node rules' get is no
				// licence to read every attachment.
				return auth.NoOpinion, noRelationship(node), nil
			}
		}
	}
	// What is not narrowed above is what the node rules allow.
	if rbac.RulesAllow(&attrs, a.rules...) {
		return auth.Allow, "", nil
	}
	return auth.NoOpinion, "", nil
}

// authorizePod allows a node to read the pods bound to it, create and
// delete (mirror) pods, write pod status and evict; NodeRestriction keeps
// the writes to the node's own pods.
func (a *Authorizer) authorizePod(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case "get":
			if attrs.Name == "" {
				return auth.NoOpinion, "No Object name found", nil
			}
			if !a.g.hasPod(node, attrs.Namespace, attrs.Name) {
				return auth.NoOpinion, noRelationship(node), nil
			}
			return auth.Allow, "", nil
		case "list", "watch":
			// The list and watch handlers filter by the same selector.
			for _, r := range attrs.FieldSelector {
				if r.Field == "spec.nodeName" && r.Operator == selection.Equals && r.Value == node {
					return auth.Allow, "", nil
				}
			}
			return auth.NoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case "create", "delete":
			return auth.Allow, "", nil
		}
	case "status":
		switch attrs.Verb {
		case "update", "patch":
			return auth.Allow, "", nil
		}
	case "eviction":
		if attrs.Verb == "create" {
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

// authorizeNode allows a node to read its own Node object only (by name,
// not through the graph, so that a kubelet can look for it before
// registering), and to create and update Nodes and their status, which
// NodeRestriction keeps to its own.
func authorizeNode(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case "create", "update", "patch":
			return auth.Allow, "", nil
		case "get", "list", "watch":
			switch attrs.Name {
			case node:
				return auth.Allow, "", nil
			case "":
				return auth.NoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node), nil
			default:
				return auth.NoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, attrs.Name), nil
			}
		}
	case "status":
		switch attrs.Verb {
		case "update", "patch":
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

// authorizeLease allows a node its own Lease in kube-node-lease. A create
// names no object: NodeRestriction keeps it to the node's own name.
func authorizeLease(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return auth.NoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.Namespace != corev1.NamespaceNodeLease {
		return auth.NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return auth.NoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	if attrs.Subresource != "" {
		return auth.NoOpinion, "cannot access lease subresources", nil
	}
	return auth.Allow, "", nil
}

// authorizeCSINode allows a node its own CSINode. A create names no
// object: NodeRestriction keeps it to the node's own name.
func authorizeCSINode(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return auth.NoOpinion, "can only get, create, update, patch, or delete a CSINode", nil
	}
	if attrs.Subresource != "" {
		return auth.NoOpinion, "cannot authorize CSINode subresources", nil
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return auth.NoOpinion, "can only access CSINode with the same name as the requesting node", nil
	}
	return auth.Allow, "", nil
}

// authorizeRead allows get, list and watch of a single named object of the
// node's pods. A list or watch names its object with a metadata.name
// field selector, which the server puts in attrs.Name.
func (a *Authorizer) authorizeRead(node string, k kind, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "list", "watch":
	default:
		return auth.NoOpinion, "can only read resources of this type", nil
	}
	if attrs.Subresource != "" {
		return auth.NoOpinion, "cannot read subresource", nil
	}
	if attrs.Namespace == "" {
		return auth.NoOpinion, "can only read namespaced object of this type", nil
	}
	return a.related(node, k, attrs)
}

// authorizeGet allows get of an object of the node's pods.
func (a *Authorizer) authorizeGet(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Verb != "get" {
		return auth.NoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.Subresource != "" {
		return auth.NoOpinion, "cannot get subresource", nil
	}
	return a.related(node, pvcKind, attrs)
}

// authorizeVolume allows get of a PersistentVolume bound to a claim of the
// node's pods.
func (a *Authorizer) authorizeVolume(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Verb != "get" {
		return auth.NoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.Subresource != "" {
		return auth.NoOpinion, "cannot get subresource", nil
	}
	if attrs.Name == "" {
		return auth.NoOpinion, "No Object name found", nil
	}
	if !a.g.hasVolume(node, attrs.Name) {
		return auth.NoOpinion, noRelationship(node), nil
	}
	return auth.Allow, "", nil
}

// authorizeStatusUpdate allows update and patch of the status of a claim
// of the node's pods (the kubelet records volume expansion there).
func (a *Authorizer) authorizeStatusUpdate(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "update", "patch":
	default:
		return auth.NoOpinion, "can only get/update/patch this type", nil
	}
	return a.related(node, pvcKind, attrs)
}

// authorizeCreateToken allows a TokenRequest for a service account of the
// node's pods.
func (a *Authorizer) authorizeCreateToken(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Verb != "create" || attrs.Name == "" {
		return auth.NoOpinion, "can only create tokens for individual service accounts", nil
	}
	if attrs.Subresource != "token" {
		return auth.NoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return a.related(node, serviceAccountKind, attrs)
}

// related allows the request when a pod bound to node references the
// named object.
func (a *Authorizer) related(node string, k kind, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Name == "" {
		return auth.NoOpinion, "No Object name found", nil
	}
	if !a.g.has(node, ref{kind: k, namespace: attrs.Namespace, name: attrs.Name}) {
		return auth.NoOpinion, noRelationship(node), nil
	}
	return auth.Allow, "", nil
}

func noRelationship(node string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}
