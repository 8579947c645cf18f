package apiserver

import (
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// The parts of the write path that differ for custom resources, whose
// objects are unstructured: what the status subresource may change and
// what bumps metadata.generation, as upstream's custom resource strategies
// decide.

// keepOnlyStatus makes obj, written through the status subresource, old
// with obj's status (and obj's managedFields, which the field manager
// computed for this write).
func keepOnlyStatus(obj, old *unstructured.Unstructured) {
	status, had := obj.Object["status"]
	managed := obj.GetManagedFields()
	obj.Object = old.DeepCopy().Object
	obj.SetManagedFields(managed)
	if had {
		obj.Object["status"] = status
	} else {
		delete(obj.Object, "status")
	}
}

// keepStatus keeps old's status in obj, written through the object itself
// when the status subresource is served.
func keepStatus(obj, old *unstructured.Unstructured) {
	if status, ok := old.Object["status"]; ok {
		obj.Object["status"] = runtime.DeepCopyJSONValue(status)
	} else {
		delete(obj.Object, "status")
	}
}

// specChanged reports whether obj differs from old outside metadata (and
// status, when the status subresource is served): what bumps a custom
// resource's generation.
func specChanged(obj, old *unstructured.Unstructured, statusSubresource bool) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k == "metadata" || (statusSubresource && k == "status") {
				continue
			}
			m[k] = v
		}
		return m
	}
	return !apiequality.Semantic.DeepEqual(strip(obj), strip(old))
}

// pruneUnknown drops the fields res's schema does not declare from obj, a
// decoded write, and applies the request's fieldValidation to them as
// upstream does: Strict refuses the write, Warn returns a warning per
// field, Ignore drops them silently.
func pruneUnknown(res *resource.Resource, obj runtime.Object, directive string) ([]string, error) {
	if res.Prune == nil {
		return nil, nil
	}
	pruned := res.Prune(obj)
	if len(pruned) == 0 {
		return nil, nil
	}
	msgs := make([]string, len(pruned))
	for i, p := range pruned {
		msgs[i] = fmt.Sprintf("unknown field %q", p)
	}
	switch directive {
	case metav1.FieldValidationStrict:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
			res.GVK.Kind, res.GVK.Version, res.GVK.Kind, strings.Join(msgs, ", ")))
	case metav1.FieldValidationWarn:
		return msgs, nil
	}
	return nil, nil
}
