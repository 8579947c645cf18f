package apiserver

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// ErrRecreate, returned by a reconcile function, makes Ensure delete the
// stored object and create the desired one (a binding whose roleRef
// changed cannot be updated).
var ErrRecreate = errors.New("apiserver: recreate the object")

// Reconcile returns what to store given the stored object, and whether it
// differs from it.
type Reconcile func(existing runtime.Object) (updated runtime.Object, changed bool, err error)

// Ensure makes the server's own object desired exist: it is created when
// missing and, when it exists, reconcile (nil: leave it) decides whether
// to update it. Writes go through the same path as every request's
// (defaults, admission, validation) as the server's internal user. Several
// API servers may race here: losing a create or an update to another is
// success.
func (s *Server) Ensure(ctx context.Context, gvr schema.GroupVersionResource, desired runtime.Object, reconcile Reconcile) error {
	res, ok := s.table.get(gvr)
	if !ok {
		return fmt.Errorf("ensure: %s is not served", gvr)
	}
	ctx = auth.WithUser(ctx, auth.APIServer)
	m, err := meta.Accessor(desired)
	if err != nil {
		return err
	}
	ns, name := m.GetNamespace(), m.GetName()
	cur, kv, err := s.readObject(ctx, res, keyFor(res, ns, name), name, false)
	switch {
	case apierrors.IsNotFound(err):
		_, err = s.createObject(ctx, res, desired.DeepCopyObject(), false)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	case err != nil:
		return err
	case reconcile == nil:
		return nil
	}
	_, changed, err := reconcile(cur)
	if errors.Is(err, ErrRecreate) {
		return s.recreate(ctx, res, keyFor(res, ns, name), kv.ModRevision, desired)
	}
	if err != nil || !changed {
		return err
	}
	// The swap reconciles what is stored when it runs (the read above may
	// be stale); an unchanged result is a no-op update.
	_, err = s.guaranteedUpdate(ctx, res, ns, name, "", false, func(latest runtime.Object) (runtime.Object, error) {
		u, changed, err := reconcile(latest)
		if err != nil || !changed {
			return latest, err
		}
		return u, nil
	})
	if apierrors.IsConflict(err) {
		return nil // another API server reconciled it at the same time
	}
	return err
}

// recreate deletes the object stored at key if it is still at rev, then
// creates desired.
func (s *Server) recreate(ctx context.Context, res *resource.Resource, key string, rev int64, desired runtime.Object) error {
	if _, _, err := s.store.Delete(ctx, key, rev); err != nil {
		return fmt.Errorf("deleting %s to recreate it: %w", key, err)
	}
	_, err := s.createObject(ctx, res, desired.DeepCopyObject(), false)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// UpdateStatus stores obj's status if obj's resourceVersion is still the
// stored one (a compare-and-swap: otherwise a Conflict), through the
// status subresource's path (admission, validation). It is how server
// code such as quota admission writes what it accounted.
func (s *Server) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	res, ok := s.table.get(gvr)
	if !ok {
		return nil, fmt.Errorf("update status: %s is not served", gvr)
	}
	ctx = auth.WithUser(ctx, auth.APIServer)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	r, err := s.guaranteedUpdate(ctx, res, m.GetNamespace(), m.GetName(), string(resource.Status), false, func(runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		return nil, err
	}
	return r.obj, nil
}

// Get reads one object from etcd (a quorum read), for server code that
// must see what is stored now: admission's fallback when its cache has
// not seen an object yet.
func (s *Server) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, ok := s.table.get(gvr)
	if !ok {
		return nil, fmt.Errorf("get: %s is not served", gvr)
	}
	obj, _, err := s.readObject(ctx, res, keyFor(res, namespace, name), name, false)
	return obj, err
}

// List reads the objects of a resource in a namespace ("" for all or for
// cluster-scoped resources) from the local etcd member.
func (s *Server) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	res, ok := s.table.get(gvr)
	if !ok {
		return nil, fmt.Errorf("list: %s is not served", gvr)
	}
	page, err := s.store.ListSerializable(ctx, prefixFor(res, namespace))
	if err != nil {
		return nil, storageError(err, res.GroupResource(), "")
	}
	out := make([]runtime.Object, 0, len(page.KVs))
	for _, kv := range page.KVs {
		obj, err := decodeStored(res, kv)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}
