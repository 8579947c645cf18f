package resource

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Subresource names a subresource a Resource serves.
type Subresource string

// The subresources the generic handlers know.
const (
	Status   Subresource = "status"
	Scale    Subresource = "scale"
	Binding  Subresource = "binding"
	Log      Subresource = "log"
	Finalize Subresource = "finalize"
	Eviction Subresource = "eviction"
	Token    Subresource = "token"    // serviceaccounts/token: a TokenRequest
	Approval Subresource = "approval" // certificatesigningrequests/approval
	// Exec, Attach and PortForward are pods' streaming subresources,
	// proxied to the kubelet.
	Exec        Subresource = "exec"
	Attach      Subresource = "attach"
	PortForward Subresource = "portforward"
)

// Resource is one row of the table.
type Resource struct {
	GVK        schema.GroupVersionKind
	Plural     string // "deployments"
	Singular   string // "deployment"
	Namespaced bool
	ShortNames []string
	Categories []string // "all" makes `kubectl get all` include it
	// Subresources the resource serves besides the object itself.
	Subresources []Subresource
	// CreateOnly marks a resource that is answered, never stored (access
	// and token reviews): its only verb is create.
	CreateOnly bool

	// New returns an empty object of the kind; NewList an empty list.
	New     func() runtime.Object
	NewList func() runtime.Object

	// HasGeneration makes the server set metadata.generation to 1 on create
	// and bump it on every change of the object outside metadata and status.
	HasGeneration bool

	// Default fills defaults a Kubernetes user expects (may be nil).
	Default func(obj runtime.Object)
	// PrepareForCreate resets what a client may not set on create, such as
	// status (may be nil).
	PrepareForCreate func(obj runtime.Object)
	// PrepareForCreateBy records who creates the object, for kinds that
	// keep it (a CertificateSigningRequest's spec.username and groups).
	PrepareForCreateBy func(obj runtime.Object, u auth.User)
	// PrepareForUpdate carries over what an update may leave out, such as
	// allocated addresses (may be nil).
	PrepareForUpdate func(obj, old runtime.Object)
	// Validate checks a new object; ValidateUpdate checks a change.
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateSubresource checks a change made through a subresource
	// (may be nil: ValidateUpdate then checks it).
	ValidateSubresource func(obj, old runtime.Object, sub string) field.ErrorList
	// Fields returns the attributes field selectors match on, beyond
	// metadata.name and metadata.namespace (may be nil).
	Fields func(obj runtime.Object) fields.Set
	// Scale reads and writes the scale subresource (nil when not served).
	Scale *ScaleAccess

	// The rest is set for custom resources, whose objects are
	// *unstructured.Unstructured.

	// Prune drops the fields the resource's schema does not know from a
	// decoded object and returns their paths ("spec.extra"), which the
	// request's fieldValidation turns into an error or warnings (nil: no
	// pruning).
	Prune func(obj runtime.Object) []string
	// Columns and Cells print the resource's table (nil: the built-in
	// printer of its kind).
	Columns []metav1.TableColumnDefinition
	Cells   func(obj runtime.Object, now time.Time) ([]any, error)
	// TypeConverter describes the kind to server-side apply (nil: client-go's
	// schema for built-in kinds, every field atomic otherwise).
	TypeConverter managedfields.TypeConverter
	// Versions are every served version of the kind, all stored under one
	// prefix and converted by rewriting apiVersion (a CRD's None
	// conversion). Empty for built-in kinds, served in one version.
	Versions []string
}

// ScaleAccess reads and writes the replica count behind /scale.
type ScaleAccess struct {
	// Get returns spec replicas, status replicas and the label selector.
	Get func(obj runtime.Object) (spec, status int32, selector string)
	// Set writes spec replicas.
	Set func(obj runtime.Object, replicas int32)
}

// Custom reports whether the resource is a custom resource (a CRD's
// version): its objects are *unstructured.Unstructured.
func (r *Resource) Custom() bool { return len(r.Versions) > 0 }

// GroupVersion returns the resource's group and version.
func (r *Resource) GroupVersion() schema.GroupVersion { return r.GVK.GroupVersion() }

// GroupResource returns the resource's group and plural name.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GVK.Group, Resource: r.Plural}
}

// Serves reports whether the resource serves the subresource.
func (r *Resource) Serves(s Subresource) bool {
	for _, have := range r.Subresources {
		if have == s {
			return true
		}
	}
	return false
}

// FieldSet returns every field-selector attribute of obj.
func (r *Resource) FieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{}
	if m, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = m.GetName()
		if r.Namespaced {
			set["metadata.namespace"] = m.GetNamespace()
		}
	}
	if r.Fields != nil {
		for k, v := range r.Fields(obj) {
			set[k] = v
		}
	}
	return set
}

// Verbs returns the discovery verbs of the resource itself.
func (r *Resource) Verbs() metav1.Verbs {
	if r.CreateOnly {
		return metav1.Verbs{"create"}
	}
	return metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}
