package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// decodeBody reads and decodes a write's body into a new object of the resource.
func decodeBody(r *http.Request, res *resource.Resource) (runtime.Object, []string, error) {
	directive, err := fieldValidation(r)
	if err != nil {
		return nil, nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	obj := res.New()
	warnings, err := decodeRequest(r, body, obj, directive)
	if err != nil {
		return nil, nil, err
	}
	if err := checkTypeMeta(res, obj); err != nil {
		return nil, nil, err
	}
	more, err := pruneUnknown(res, obj, directive)
	if err != nil {
		return nil, nil, err
	}
	return obj, append(warnings, more...), nil
}

// writeWarnings sends each warning as upstream does: a Warning header with
// code 299, agent "-" and the text as an HTTP quoted string, its quotes
// and backslashes escaped (clients show them as written). Control
// characters, which a header cannot carry, become spaces.
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		h, err := utilnet.NewWarningHeader(299, "-", strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, msg))
		if err == nil {
			w.Header().Add("Warning", h)
		}
	}
}

// invalid builds a 422 from field errors.
func invalid(res *resource.Resource, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(res.GVK.GroupKind(), name, errs)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	ctx := r.Context()
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	isDryRun, err := dryRun(r)
	if err != nil {
		return err
	}
	obj, warnings, err := decodeBody(r, res)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ri.Namespace)
		}
		if ri.Namespace == "" {
			return apierrors.NewBadRequest("a namespace is required to create " + res.Plural)
		}
		if m.GetNamespace() != ri.Namespace {
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else if m.GetNamespace() != "" {
		m.SetNamespace("")
	}
	if m.GetResourceVersion() != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	created, err := s.createObject(context.WithValue(ctx, postedKey{}, true), res, obj, isDryRun)
	if err != nil {
		return err
	}
	writeWarnings(w, warnings)
	v, err := render(res, out, []runtime.Object{created}, nil, listMetaOf(created))
	if err != nil {
		return err
	}
	writeOut(w, out, http.StatusCreated, v)
	return nil
}

// createObject fills server-owned metadata, defaults, admits, validates and
// stores obj. It is also the path other server code uses to create objects.
func (s *Server) createObject(ctx context.Context, res *resource.Resource, obj runtime.Object, isDryRun bool) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(generateName(m.GetGenerateName()))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetManagedFields(nil)
	m.SetSelfLink("")
	m.SetGeneration(0)
	if res.HasGeneration {
		m.SetGeneration(1)
	}
	if res.Default != nil {
		res.Default(obj)
	}
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj)
	}
	if res.PrepareForCreateBy != nil {
		res.PrepareForCreateBy(obj, auth.UserFrom(ctx))
	}
	s.recordManager(ctx, res, obj, nil, "")
	// Upstream's order: the mutating plugins, then the object is prepared
	// and validated as it will be stored, then the validating plugins judge
	// it. So a pod's QoS class is that of the resources LimitRanger gave
	// it, and an invalid object is refused before quota charges it.
	if err := s.admitStep(ctx, admitMutating, res, auth.Create, obj, nil, "", isDryRun); err != nil {
		return nil, err
	}
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj) // again: what the plugins changed
	}
	if res.Validate != nil {
		if errs := res.Validate(obj); len(errs) > 0 {
			return nil, invalid(res, m.GetName(), errs)
		}
	}
	if m.GetName() == "" {
		return nil, invalid(res, "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	if err := s.admitStep(ctx, admitValidating, res, auth.Create, obj, nil, "", isDryRun); err != nil {
		return nil, err
	}
	alloc := s.allocator(res)
	var unallocated runtime.Object
	if alloc != nil {
		unallocated = obj.DeepCopyObject()
	}
	parent := ""
	if res.Namespaced {
		parent = "/registry/core/namespaces/" + m.GetNamespace()
	}
	for attempt, claimAttempt := 0, 0; ; attempt++ {
		var side storage.Side
		if alloc != nil {
			if attempt > 0 {
				// Pick again from what the client sent (keeping the name).
				name := m.GetName()
				copyInto(obj, unallocated)
				m.SetName(name)
			}
			if side, err = alloc.Allocate(ctx, obj, nil); err != nil {
				return nil, err
			}
		}
		if isDryRun {
			return obj, nil
		}
		data, err := s.encodeForStorage(res, obj)
		if err != nil {
			return nil, err
		}
		rev, err := s.store.CreateWith(ctx, keyFor(res, m.GetNamespace(), m.GetName()), data, parent, side)
		if errors.Is(err, storage.ErrExists) && generated && attempt < 8 {
			m.SetName(generateName(m.GetGenerateName()))
			continue
		}
		if errors.Is(err, storage.ErrClaimed) && claimAttempt < maxClaimAttempts {
			claimAttempt++
			continue
		}
		if errors.Is(err, storage.ErrNoParent) {
			return nil, apierrors.NewNotFound(namespacesGR, m.GetNamespace())
		}
		if err != nil {
			return nil, storageError(err, res.GroupResource(), m.GetName())
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		return obj, nil
	}
}

// postedKey marks the context of a create POSTed to its collection.
type postedKey struct{}

// admit runs the admission chain, if any.
func (s *Server) admit(ctx context.Context, res *resource.Resource, op auth.Operation, obj, old runtime.Object, sub string, isDryRun bool) error {
	return s.admitStep(ctx, admitAll, res, op, obj, old, sub, isDryRun)
}

// admissionStep is which of admission's two steps to run.
type admissionStep int

const (
	admitAll        admissionStep = iota
	admitMutating                 // the plugins that may change the object
	admitValidating               // the plugins that only judge it
)

// steppedAdmitter is an admission chain that runs its two steps apart
// (admission.Timed). A chain that cannot runs whole in the mutating step.
type steppedAdmitter interface {
	Mutate(ctx context.Context, req *auth.AdmissionRequest) error
	Validate(ctx context.Context, req *auth.AdmissionRequest) error
}

// admitStep runs one step of admission on a write (admitAll: both).
func (s *Server) admitStep(ctx context.Context, step admissionStep, res *resource.Resource, op auth.Operation, obj, old runtime.Object, sub string, isDryRun bool) error {
	if s.cfg.Admission == nil {
		return nil
	}
	stepped, ok := s.cfg.Admission.(steppedAdmitter)
	if !ok && step == admitValidating {
		return nil
	}
	m, _ := meta.Accessor(firstNonNil(obj, old))
	a := auth.Attributes{User: auth.UserFrom(ctx), ResourceRequest: true, APIGroup: res.GVK.Group, APIVersion: res.GVK.Version, Resource: res.Plural, Subresource: sub}
	if m != nil {
		a.Namespace, a.Name = m.GetNamespace(), m.GetName()
	}
	_, posted := ctx.Value(postedKey{}).(bool)
	req := &auth.AdmissionRequest{Operation: op, Attributes: a, Kind: res.GVK, Object: obj, OldObject: old, DryRun: isDryRun, Subresource: sub,
		Posted: posted && op == auth.Create}
	var err error
	switch {
	case step == admitAll || !ok:
		err = s.cfg.Admission.Admit(ctx, req)
	case step == admitMutating:
		err = stepped.Mutate(ctx, req)
	default:
		err = stepped.Validate(ctx, req)
	}
	addWarnings(ctx, req.Warnings)
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			return err
		}
		return apierrors.NewForbidden(res.GroupResource(), a.Name, fmt.Errorf("admission: %w", err))
	}
	return nil
}

func firstNonNil(objs ...runtime.Object) runtime.Object {
	for _, o := range objs {
		if o != nil {
			return o
		}
	}
	return nil
}

// generateName appends five random characters, as upstream does.
func generateName(base string) string {
	const maxNameLength, randomLength = 63, 5
	if len(base) > maxNameLength-randomLength {
		base = base[:maxNameLength-randomLength]
	}
	return base + utilrand.String(randomLength)
}
