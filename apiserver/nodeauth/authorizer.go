package nodeauth

import (
	"context"
	"fmt"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Authorizer is upstream's Node authorizer reduced to what kubebus serves.
// For a kubelet (a user system:node:NAME in system:nodes) it allows
//   - get, list and watch of one named secret or configmap,
//   - get of a persistentvolumeclaim, and update or patch of its status,
//   - get of the persistentvolume such a claim is bound to,
//   - create of a serviceaccount's token,
//
// when a pod bound to the node references the object; any other request
// on those resources gets NoOpinion with upstream's reason, and every
// request on other resources, or of a user that is not a node, gets
// NoOpinion: RBAC (the system:node role) decides. It belongs in a Union
// before RBAC.
type Authorizer struct {
	g *Graph
}

var _ auth.Authorizer = (*Authorizer)(nil)

// NewAuthorizer returns the Node authorizer answering from g.
func NewAuthorizer(g *Graph) *Authorizer { return &Authorizer{g: g} }

// Authorize implements auth.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	node, ok := attrs.User.NodeName()
	if !ok {
		if attrs.User.InGroup(auth.NodesGroup) && attrs.User.Name == auth.NodeUserPrefix {
			return auth.NoOpinion, fmt.Sprintf("unknown node for user %q", attrs.User.Name), nil
		}
		return auth.NoOpinion, "", nil
	}
	if !attrs.ResourceRequest || attrs.APIGroup != "" {
		return auth.NoOpinion, "", nil
	}
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
	}
	return auth.NoOpinion, "", nil
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
