package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// errConflict is the 409 a stale resourceVersion gets.
func errConflict(res *resource.Resource, name string) error {
	return storageError(storage.ErrConflict, res.GroupResource(), name)
}

// mutateFunc turns the stored object into the desired one. It gets a deep
// copy it may change.
type mutateFunc func(cur runtime.Object) (runtime.Object, error)

// updateResult is what guaranteedUpdate did.
type updateResult struct {
	obj     runtime.Object
	deleted bool
}

// guaranteedUpdate reads the object, applies mutate, finishes the update
// through the subresource's rules and writes it with compare-and-swap,
// retrying on a conflict unless the client pinned a resourceVersion.
//
// The first read is served by the local etcd member without a quorum
// round (serializable), as upstream serves it from its watch cache: the
// compare-and-swap checks it. Every outcome the swap does not check (an
// error from mutate or admission, a pinned resourceVersion that differs, a
// no-op, a dry run) is decided again on a linearizable read.
func (s *Server) guaranteedUpdate(ctx context.Context, res *resource.Resource, ns, name, sub string, isDryRun bool, mutate mutateFunc) (updateResult, error) {
	key := keyFor(res, ns, name)
	optimistic := !isDryRun
	for attempt := 0; ; attempt++ {
		r, err := s.tryUpdate(ctx, res, key, name, sub, isDryRun, optimistic, mutate)
		var retry errRetry
		switch {
		case errors.As(err, &retry) && optimistic:
			optimistic = false
			continue
		case errors.As(err, &retry) && retry.conflict && attempt < 16:
			continue
		case errors.As(err, &retry):
			return updateResult{}, retry.err
		}
		return r, err
	}
}

// errRetry is an attempt of guaranteedUpdate that may be tried again:
// after an optimistic read, or after a conflict the client did not pin.
type errRetry struct {
	err      error
	conflict bool
}

func (e errRetry) Error() string { return e.err.Error() }

// tryUpdate is one attempt of guaranteedUpdate.
func (s *Server) tryUpdate(ctx context.Context, res *resource.Resource, key, name, sub string, isDryRun, optimistic bool, mutate mutateFunc) (updateResult, error) {
	unsure := func(err error) error {
		if optimistic {
			return errRetry{err: err}
		}
		return err
	}
	cur, kv, err := s.readObject(ctx, res, key, name, optimistic)
	if err != nil {
		return updateResult{}, unsure(err)
	}
	desired, err := mutate(cur.DeepCopyObject())
	if err != nil {
		return updateResult{}, unsure(err)
	}
	dm, err := meta.Accessor(desired)
	if err != nil {
		return updateResult{}, err
	}
	pinned := dm.GetResourceVersion()
	if pinned != "" && pinned != strconv.FormatInt(kv.ModRevision, 10) {
		return updateResult{}, unsure(errConflict(res, name))
	}
	if err := s.finishUpdate(ctx, res, desired, cur, sub, isDryRun); err != nil {
		return updateResult{}, unsure(err)
	}
	if shouldDeleteDuringUpdate(desired) {
		if isDryRun {
			return updateResult{obj: desired, deleted: true}, nil
		}
		var side storage.Side
		if alloc := s.allocator(res); alloc != nil {
			side = alloc.Release(cur)
		}
		rev, _, err := s.store.DeleteWith(ctx, key, kv.ModRevision, side)
		if errors.Is(err, storage.ErrConflict) && (pinned == "" || optimistic) {
			return updateResult{}, errRetry{err: storageError(err, res.GroupResource(), name), conflict: pinned == ""}
		}
		if err != nil {
			return updateResult{}, storageError(err, res.GroupResource(), name)
		}
		dm.SetResourceVersion(strconv.FormatInt(rev, 10))
		return updateResult{obj: desired, deleted: true}, nil
	}
	var side storage.Side
	if alloc := s.allocator(res); alloc != nil && sub == "" {
		if side, err = alloc.Allocate(ctx, desired, cur); err != nil {
			return updateResult{}, unsure(err)
		}
	}
	data, err := s.encodeForStorage(res, desired)
	if err != nil {
		return updateResult{}, err
	}
	if !bytes.Equal(data, kv.Value) {
		// A real change: record who made it and encode again.
		if s.recordManager(ctx, res, desired, cur, sub) {
			if data, err = s.encodeForStorage(res, desired); err != nil {
				return updateResult{}, err
			}
		}
	}
	// A value read with an old encryption key is written again even when
	// unchanged, so that rewriting objects rotates their key.
	if bytes.Equal(data, kv.Value) && !kv.Stale || isDryRun {
		if optimistic {
			return updateResult{}, errRetry{err: errConflict(res, name)}
		}
		dm.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
		return updateResult{obj: desired}, nil
	}
	rev, _, err := s.store.UpdateWith(ctx, key, data, kv.ModRevision, side)
	switch {
	case errors.Is(err, storage.ErrConflict) && (pinned == "" || optimistic):
		return updateResult{}, errRetry{err: storageError(err, res.GroupResource(), name), conflict: pinned == ""}
	case errors.Is(err, storage.ErrClaimed):
		return updateResult{}, errRetry{err: storageError(err, res.GroupResource(), name), conflict: true}
	case err != nil:
		return updateResult{}, storageError(err, res.GroupResource(), name)
	}
	dm.SetResourceVersion(strconv.FormatInt(rev, 10))
	return updateResult{obj: desired}, nil
}

// readObject reads and decodes the stored object: from the local etcd
// member when serializable, else with a quorum read.
func (s *Server) readObject(ctx context.Context, res *resource.Resource, key, name string, serializable bool) (runtime.Object, storage.KV, error) {
	read := s.store.Get
	if serializable {
		read = s.store.GetSerializable
	}
	kv, err := read(ctx, key)
	if err != nil {
		return nil, storage.KV{}, storageError(err, res.GroupResource(), name)
	}
	obj, err := decodeStored(res, kv)
	if err != nil {
		return nil, storage.KV{}, err
	}
	return obj, kv, nil
}

// finishUpdate carries server-owned fields over from old, limits the change
// to what the subresource may touch, bumps generation, admits and validates.
func (s *Server) finishUpdate(ctx context.Context, res *resource.Resource, obj, old runtime.Object, sub string, isDryRun bool) error {
	nm, _ := meta.Accessor(obj)
	om, _ := meta.Accessor(old)
	if nm.GetName() != om.GetName() {
		return apierrors.NewBadRequest("the name of the object (" + nm.GetName() + ") does not match the name on the URL (" + om.GetName() + ")")
	}
	if res.Namespaced && nm.GetNamespace() != "" && nm.GetNamespace() != om.GetNamespace() {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	rv := nm.GetResourceVersion()
	u, custom := obj.(*unstructured.Unstructured)
	switch resource.Subresource(sub) {
	case resource.Status:
		if custom {
			keepOnlyStatus(u, old.(*unstructured.Unstructured))
			break
		}
		// Only status changes; everything else stays as stored.
		src := obj.DeepCopyObject()
		copyInto(obj, old)
		if st := fieldValue(src, "Status"); st.IsValid() {
			fieldValue(obj, "Status").Set(st)
		}
	case resource.Approval:
		// Only the approval conditions change (certificatesigningrequests/approval).
		src := obj.DeepCopyObject()
		copyInto(obj, old)
		if c := fieldValue(src, "Status").FieldByName("Conditions"); c.IsValid() {
			fieldValue(obj, "Status").FieldByName("Conditions").Set(c)
		}
	case resource.Finalize:
		src := obj.DeepCopyObject()
		copyInto(obj, old)
		if sp := fieldValue(src, "Spec"); sp.IsValid() {
			fieldValue(obj, "Spec").Set(sp)
		}
	case resource.Binding:
		// Binding sets spec.nodeName and the PodScheduled condition together.
	default:
		if res.Serves(resource.Status) && custom {
			keepStatus(u, old.(*unstructured.Unstructured))
		} else if res.Serves(resource.Status) {
			if st := fieldValue(old, "Status"); st.IsValid() {
				fieldValue(obj, "Status").Set(st)
			}
		}
	}
	if rv == "" {
		// An unconditional update applies to the stored version.
		rv = om.GetResourceVersion()
	}
	nm.SetResourceVersion(rv)
	nm.SetNamespace(om.GetNamespace())
	nm.SetUID(om.GetUID())
	nm.SetCreationTimestamp(om.GetCreationTimestamp())
	nm.SetDeletionTimestamp(om.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(om.GetGeneration())
	if nm.GetManagedFields() == nil {
		// Left out: kept. Sent: the field manager takes them as upstream's
		// does (an empty list resets them).
		nm.SetManagedFields(om.GetManagedFields())
	}
	nm.SetSelfLink("")
	if om.GetDeletionTimestamp() != nil && len(nm.GetFinalizers()) > len(om.GetFinalizers()) {
		for _, f := range nm.GetFinalizers() {
			if !contains(om.GetFinalizers(), f) {
				return invalid(res, om.GetName(), field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
					fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", f))})
			}
		}
	}
	if res.PrepareForUpdate != nil && sub == "" {
		res.PrepareForUpdate(obj, old)
	}
	if res.Default != nil {
		res.Default(obj)
	}
	if res.HasGeneration && sub == "" && custom {
		if specChanged(u, old.(*unstructured.Unstructured), res.Serves(resource.Status)) {
			nm.SetGeneration(om.GetGeneration() + 1)
		}
	} else if res.HasGeneration && sub == "" {
		if sp, osp := fieldValue(obj, "Spec"), fieldValue(old, "Spec"); sp.IsValid() && !apiequality.Semantic.DeepEqual(sp.Interface(), osp.Interface()) {
			nm.SetGeneration(om.GetGeneration() + 1)
		}
	}
	if err := s.admitStep(ctx, admitMutating, res, auth.Update, obj, old, sub, isDryRun); err != nil {
		return err
	}
	validate := res.ValidateUpdate
	if sub != "" && res.ValidateSubresource != nil {
		validate = func(obj, old runtime.Object) field.ErrorList { return res.ValidateSubresource(obj, old, sub) }
	}
	if validate != nil && sub != string(resource.Binding) {
		if errs := validate(obj, old); len(errs) > 0 {
			return invalid(res, nm.GetName(), errs)
		}
	}
	// The validating plugins judge the update as it will be stored, after
	// validation, as upstream: quota charges no invalid update.
	return s.admitStep(ctx, admitValidating, res, auth.Update, obj, old, sub, isDryRun)
}

// shouldDeleteDuringUpdate: an object being deleted whose last finalizer is
// gone, with no grace period left, is removed by the update that clears it.
func shouldDeleteDuringUpdate(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 || namespaceFinalizing(obj) {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

func fieldValue(obj runtime.Object, name string) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}

// copyInto overwrites *dst with *src (same type).
func copyInto(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource, sub resource.Subresource) error {
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
	m, _ := meta.Accessor(obj)
	if m.GetName() != ri.Name {
		return apierrors.NewBadRequest("the name of the object (" + m.GetName() + ") does not match the name on the URL (" + ri.Name + ")")
	}
	result, err := s.guaranteedUpdate(r.Context(), res, ri.Namespace, ri.Name, string(sub), isDryRun, func(runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		return err
	}
	writeWarnings(w, warnings)
	v, err := render(res, out, []runtime.Object{result.obj}, nil, listMetaOf(result.obj))
	if err != nil {
		return err
	}
	writeOut(w, out, http.StatusOK, v)
	return nil
}
