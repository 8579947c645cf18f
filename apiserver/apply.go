package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// applyOptions are the PatchOptions of a server-side apply.
type applyOptions struct {
	manager string
	force   bool
}

// parseApplyOptions decodes and validates the query of an apply as
// upstream does: fieldManager is required, force is a boolean.
func parseApplyOptions(r *http.Request, pt types.PatchType) (applyOptions, error) {
	opts := &metav1.PatchOptions{}
	if err := decodeParams(r.URL.Query(), opts); err != nil {
		return applyOptions{}, err
	}
	if errs := metav1validation.ValidatePatchOptions(opts, pt); len(errs) > 0 {
		return applyOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	return applyOptions{manager: opts.FieldManager, force: opts.Force != nil && *opts.Force}, nil
}

// apply serves a server-side apply (application/apply-patch+yaml): the
// field manager merges the applied configuration into the stored object,
// or into an empty one when there is none (apply creates), takes the
// fields for the manager and answers 409 naming the other managers of
// fields it would change, unless forced.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource, sub resource.Subresource, pr patchRequest, isDryRun bool, out output) error {
	opts, err := parseApplyOptions(r, pr.typ)
	if err != nil {
		return err
	}
	fm := s.fields.For(res, sub)
	if fm == nil {
		return statusError(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("server-side apply is not supported on %s/%s", res.Plural, sub))
	}
	patchObj := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(pr.body, &patchObj.Object); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if err := checkTypeMeta(res, patchObj); err != nil {
		return err
	}
	var warnings []string
	if pr.directive == metav1.FieldValidationStrict || pr.directive == metav1.FieldValidationWarn {
		if err := yaml.UnmarshalStrict(pr.body, &map[string]any{}); err != nil {
			if pr.directive == metav1.FieldValidationStrict {
				return apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
			}
			warnings = append(warnings, err.Error())
		}
	}
	applied := &appliedFields{manager: opts.manager}
	ctx := withApplied(r.Context(), applied)
	merge := func(cur runtime.Object) (runtime.Object, error) {
		setTypeMeta(res, cur)
		obj, err := fm.Apply(cur, patchObj.DeepCopy(), opts.manager, opts.force)
		if err != nil {
			return nil, applyError(err)
		}
		setTypeMeta(res, obj)
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		applied.entries = m.GetManagedFields()
		if cm, _ := meta.Accessor(cur); m.GetResourceVersion() == cm.GetResourceVersion() {
			// The configuration did not pin a version: it applies to whatever is current.
			m.SetResourceVersion("")
		}
		return obj, nil
	}
	result, err := s.guaranteedUpdate(ctx, res, ri.Namespace, ri.Name, string(sub), isDryRun, merge)
	code := http.StatusOK
	var created runtime.Object
	if apierrors.IsNotFound(err) && sub == "" && isNotFoundOf(err, res, ri.Name) {
		if created, err = s.applyCreate(ctx, ri, res, merge, isDryRun); err == nil {
			code = http.StatusCreated
		}
	}
	if err != nil {
		return err
	}
	if created == nil {
		created = result.obj
	}
	writeWarnings(w, warnings)
	v, err := render(res, out, []runtime.Object{created}, nil, listMetaOf(created))
	if err != nil {
		return err
	}
	writeOut(w, out, code, v)
	return nil
}

// applyCreate creates the object an apply names when there is none, from
// the configuration merged into an empty object.
func (s *Server) applyCreate(ctx context.Context, ri RequestInfo, res *resource.Resource, merge mutateFunc, isDryRun bool) (runtime.Object, error) {
	empty := res.New()
	setTypeMeta(res, empty)
	obj, err := merge(empty)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	switch {
	case m.GetName() == "":
		m.SetName(ri.Name)
	case m.GetName() != ri.Name:
		return nil, apierrors.NewBadRequest("the name of the object (" + m.GetName() + ") does not match the name on the URL (" + ri.Name + ")")
	}
	if res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ri.Namespace)
		}
		if m.GetNamespace() != ri.Namespace {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		m.SetNamespace("")
	}
	m.SetResourceVersion("")
	return s.createObject(ctx, res, obj, isDryRun)
}

// isNotFoundOf reports whether err says the object itself is missing (not
// its namespace).
func isNotFoundOf(err error, res *resource.Resource, name string) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Name == name && d.Kind == res.Plural
}

// applyError passes the field manager's API errors (409 conflicts, 400s)
// through and answers its other errors (a configuration the schema does
// not allow, such as an unknown field) as a bad request.
func applyError(err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}
