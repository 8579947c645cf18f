package admission

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// StorageClasses lists the cluster's StorageClasses as they are stored now
// (a class made default a moment ago must be seen by the next claim).
type StorageClasses interface {
	List(ctx context.Context) ([]*storagev1.StorageClass, error)
}

// DefaultStorageClass is upstream's DefaultStorageClass admission plugin:
// a PersistentVolumeClaim created without spec.storageClassName (nil, not
// "") and without the beta class annotation gets the default class, the
// newest of those annotated storageclass.kubernetes.io/is-default-class:
// "true". Without a default class the claim is left alone (the volume
// binder gives it one when a default appears).
type DefaultStorageClass struct {
	// Classes, nil, makes the plugin a no-op.
	Classes StorageClasses
}

var _ auth.Admitter = DefaultStorageClass{}

// Admit implements auth.Admitter.
func (d DefaultStorageClass) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	if d.Classes == nil || !isClaimCreate(req) {
		return nil
	}
	pvc, ok := req.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	if _, beta := pvc.Annotations[corev1.BetaStorageClassAnnotation]; beta {
		return nil
	}
	classes, err := d.Classes.List(ctx)
	if err != nil {
		return forbidRequest(req, fmt.Errorf("listing the StorageClasses: %w", err))
	}
	if def := defaultStorageClass(classes); def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// defaultStorageClass is the default among classes: of several, the newest,
// then the first by name, as upstream; nil when none is marked.
func defaultStorageClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for _, sc := range classes {
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" &&
			sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] != "true" {
			continue
		}
		switch {
		case best == nil,
			sc.CreationTimestamp.After(best.CreationTimestamp.Time),
			sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name:
			best = sc
		}
	}
	return best
}

// StorageObjectInUseProtection is upstream's plugin of that name: every
// PersistentVolumeClaim is created with the kubernetes.io/pvc-protection
// finalizer and every PersistentVolume with kubernetes.io/pv-protection,
// which the protection controller removes once the object is not in use.
type StorageObjectInUseProtection struct{}

var _ auth.Admitter = StorageObjectInUseProtection{}

// Admit implements auth.Admitter.
func (StorageObjectInUseProtection) Admit(_ context.Context, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Create || req.Subresource != "" || req.Attributes.APIGroup != "" {
		return nil
	}
	switch o := req.Object.(type) {
	case *corev1.PersistentVolumeClaim:
		o.Finalizers = addFinalizer(o.Finalizers, "kubernetes.io/pvc-protection")
	case *corev1.PersistentVolume:
		o.Finalizers = addFinalizer(o.Finalizers, "kubernetes.io/pv-protection")
	}
	return nil
}

func addFinalizer(list []string, f string) []string {
	for _, have := range list {
		if have == f {
			return list
		}
	}
	return append(list, f)
}

func isClaimCreate(req *auth.AdmissionRequest) bool {
	return req.Operation == auth.Create && req.Subresource == "" && req.Attributes.APIGroup == "" &&
		req.Attributes.Resource == "persistentvolumeclaims"
}

// storageClassPrefix is where the API server stores StorageClasses.
const storageClassPrefix = "/registry/storage.k8s.io/storageclasses/"

// StoredStorageClasses reads StorageClasses straight from the API server's
// store, from the local member when the store can (see
// StoredPriorityClasses).
type StoredStorageClasses struct {
	Store KVReader
}

var _ StorageClasses = StoredStorageClasses{}

// List implements StorageClasses.
func (s StoredStorageClasses) List(ctx context.Context) ([]*storagev1.StorageClass, error) {
	var page storage.Page
	var err error
	if sl, ok := s.Store.(serializableLister); ok {
		page, err = sl.ListSerializable(ctx, storageClassPrefix)
	} else {
		page, err = s.Store.List(ctx, storageClassPrefix, "", 0, 0)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*storagev1.StorageClass, 0, len(page.KVs))
	for _, kv := range page.KVs {
		sc := &storagev1.StorageClass{}
		if err := json.Unmarshal(kv.Value, sc); err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", kv.Key, err)
		}
		out = append(out, sc)
	}
	return out, nil
}
