package admission

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

type classList []*storagev1.StorageClass

func (l classList) List(context.Context) ([]*storagev1.StorageClass, error) { return l, nil }

type failingClasses struct{}

func (failingClasses) List(context.Context) ([]*storagev1.StorageClass, error) {
	return nil, errors.New("etcd is down")
}

func storageClass(name string, def bool, age time.Duration) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))}}
	if def {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	return sc
}

func claimCreate(class *string, annotations map[string]string) *auth.AdmissionRequest {
	return &auth.AdmissionRequest{Operation: auth.Create,
		Attributes: auth.Attributes{Resource: "persistentvolumeclaims", Namespace: "default", Name: "data"},
		Object: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", Annotations: annotations},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}}
}

func TestDefaultStorageClass(t *testing.T) {
	t.Parallel()
	classes := classList{storageClass("slow", false, 0), storageClass("old-default", true, time.Hour), storageClass("local-path", true, time.Minute)}
	tests := []struct {
		name    string
		plugin  DefaultStorageClass
		req     *auth.AdmissionRequest
		want    *string
		wantErr bool
	}{
		{"newest default is given", DefaultStorageClass{Classes: classes}, claimCreate(nil, nil), new("local-path"), false},
		{"a named class is kept", DefaultStorageClass{Classes: classes}, claimCreate(new("slow"), nil), new("slow"), false},
		{"the empty class is kept", DefaultStorageClass{Classes: classes}, claimCreate(new(""), nil), new(""), false},
		{"the beta annotation counts as a class", DefaultStorageClass{Classes: classes},
			claimCreate(nil, map[string]string{corev1.BetaStorageClassAnnotation: "slow"}), nil, false},
		{"no default class", DefaultStorageClass{Classes: classList{storageClass("slow", false, 0)}}, claimCreate(nil, nil), nil, false},
		{"no lister: off", DefaultStorageClass{}, claimCreate(nil, nil), nil, false},
		{"updates are left alone", DefaultStorageClass{Classes: classes}, func() *auth.AdmissionRequest {
			r := claimCreate(nil, nil)
			r.Operation = auth.Update
			return r
		}(), nil, false},
		{"listing fails", DefaultStorageClass{Classes: failingClasses{}}, claimCreate(nil, nil), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.plugin.Admit(context.Background(), tt.req)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Admit: %v", err)
			}
			got := tt.req.Object.(*corev1.PersistentVolumeClaim).Spec.StorageClassName
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("storageClassName %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStorageObjectInUseProtection(t *testing.T) {
	t.Parallel()
	claim := claimCreate(nil, nil)
	claim.Object.(*corev1.PersistentVolumeClaim).Finalizers = []string{"example.com/keep"}
	pv := &auth.AdmissionRequest{Operation: auth.Create, Attributes: auth.Attributes{Resource: "persistentvolumes", Name: "pv"},
		Object: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Finalizers: []string{"kubernetes.io/pv-protection"}}}}
	for _, req := range []*auth.AdmissionRequest{claim, pv} {
		if err := (StorageObjectInUseProtection{}).Admit(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := claim.Object.(*corev1.PersistentVolumeClaim).Finalizers; !slices.Equal(got, []string{"example.com/keep", "kubernetes.io/pvc-protection"}) {
		t.Errorf("claim finalizers %v", got)
	}
	if got := pv.Object.(*corev1.PersistentVolume).Finalizers; !slices.Equal(got, []string{"kubernetes.io/pv-protection"}) {
		t.Errorf("volume finalizers %v", got)
	}
}
