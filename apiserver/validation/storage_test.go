package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validPV() *corev1.PersistentVolume {
	return defaulted(&corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1", ResourceVersion: "2"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/pv-1"}},
		},
	})
}

func validPVC() *corev1.PersistentVolumeClaim {
	return defaulted(&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", ResourceVersion: "2"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
}

func validSC() *storagev1.StorageClass {
	return defaulted(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", ResourceVersion: "2"}, Provisioner: "example.com/fast",
		Parameters: map[string]string{"type": "ssd"}})
}

func TestValidatePersistentVolume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*corev1.PersistentVolume)
		wants  []want
	}{
		{"valid", func(*corev1.PersistentVolume) {}, nil},
		{"access modes required", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }, []want{required("spec.accessModes")}},
		{"access mode supported", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"WriteSometimes"}
		}, []want{notSupported("spec.accessModes")}},
		{"ReadWriteOncePod alone", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = append(pv.Spec.AccessModes, corev1.ReadWriteOncePod)
		}, []want{forbidden("spec.accessModes")}},
		{"capacity required", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil }, []want{required("spec.capacity"), notSupported("spec.capacity")}},
		{"capacity storage only", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1") }, []want{notSupported("spec.capacity")}},
		{"capacity positive", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("0") }, []want{invalid("spec.capacity[storage]")}},
		{"a source required", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath = nil }, []want{required("spec")}},
		{"one source only", func(pv *corev1.PersistentVolume) {
			pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
		}, []want{forbidden("spec.nfs")}},
		{"hostPath path", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "/a/../b" }, []want{invalid("spec.hostPath.path")}},
		{"local needs node affinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.Local = nil, &corev1.LocalVolumeSource{Path: "/mnt/disk"}
		}, []want{required("spec.nodeAffinity")}},
		{"node affinity required terms", func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{}
		}, []want{required("spec.nodeAffinity.required")}},
		{"reclaim policy", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" }, []want{notSupported("spec.persistentVolumeReclaimPolicy")}},
		{"no recycling /", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath.Path, pv.Spec.PersistentVolumeReclaimPolicy = "/", corev1.PersistentVolumeReclaimRecycle
		}, []want{forbidden("spec.persistentVolumeReclaimPolicy")}},
		{"class name", func(pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = "Fast_1" }, []want{invalid("spec.storageClassName")}},
		{"volume mode", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = new(corev1.PersistentVolumeMode("Tape")) }, []want{notSupported("spec.volumeMode")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pv := validPV()
			tt.change(pv)
			expectErrors(t, ValidateCreate(pv), tt.wants...)
		})
	}
}

func TestValidatePersistentVolumeUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*corev1.PersistentVolume)
		wants  []want
	}{
		{"claimRef and capacity may change", func(pv *corev1.PersistentVolume) {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
			pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, nil},
		{"source immutable", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "/srv/other" }, []want{forbidden("spec.persistentvolumesource")}},
		{"volume mode immutable", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = new(corev1.PersistentVolumeBlock) }, []want{invalid("volumeMode")}},
		{"node affinity may be set once", func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old, pv := validPV(), validPV()
			tt.change(pv)
			expectErrors(t, ValidateUpdate(pv, old), tt.wants...)
		})
	}
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*corev1.PersistentVolumeClaim)
		wants  []want
	}{
		{"valid", func(*corev1.PersistentVolumeClaim) {}, nil},
		{"access modes required", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.AccessModes = nil }, []want{required("spec.accessModes")}},
		{"storage request required", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.Resources.Requests = nil }, []want{required("spec.resources[storage]")}},
		{"storage request positive", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("-1Gi")
		}, []want{invalid("spec.resources[storage]")}},
		{"class name", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("a b") }, []want{invalid("spec.storageClassName")}},
		{"empty class means none", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("") }, nil},
		{"selector", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}}
		}, []want{required("spec.selector.matchExpressions[0].values")}},
		{"namespace required", func(pvc *corev1.PersistentVolumeClaim) { pvc.Namespace = "" }, []want{required("metadata.namespace")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pvc := validPVC()
			tt.change(pvc)
			expectErrors(t, ValidateCreate(pvc), tt.wants...)
		})
	}
}

func TestValidatePersistentVolumeClaimUpdate(t *testing.T) {
	t.Parallel()
	bound := func(pvc *corev1.PersistentVolumeClaim) {
		pvc.Spec.VolumeName = "pv-1"
		pvc.Status.Phase = corev1.ClaimBound
	}
	tests := []struct {
		name        string
		old, change func(*corev1.PersistentVolumeClaim)
		wants       []want
	}{
		{"volumeName set once", func(*corev1.PersistentVolumeClaim) {}, func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "pv-1" }, nil},
		{"volumeName not changed", bound, func(pvc *corev1.PersistentVolumeClaim) { bound(pvc); pvc.Spec.VolumeName = "pv-2" }, []want{forbidden("spec")}},
		{"default class set on a class-less claim", func(*corev1.PersistentVolumeClaim) {},
			func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("local-path") }, nil},
		{"class not changed", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("a") },
			func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("b") }, []want{forbidden("spec")}},
		{"access modes immutable", func(*corev1.PersistentVolumeClaim) {},
			func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			}, []want{forbidden("spec")}},
		{"pending claim cannot grow", func(*corev1.PersistentVolumeClaim) {},
			func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			}, []want{forbidden("spec")}},
		{"bound claim grows", bound, func(pvc *corev1.PersistentVolumeClaim) {
			bound(pvc)
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, nil},
		{"bound claim does not shrink", bound, func(pvc *corev1.PersistentVolumeClaim) {
			bound(pvc)
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
		}, []want{forbidden("spec.resources.requests.storage")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old, pvc := validPVC(), validPVC()
			tt.old(old)
			tt.change(pvc)
			errs := ValidateUpdate(pvc, old)
			expectErrors(t, errs, tt.wants...)
			for _, e := range errs {
				if e.Field == "spec" && !strings.HasPrefix(e.Detail, "spec is immutable after creation except resources.requests") {
					t.Errorf("message %q", e.Detail)
				}
			}
		})
	}
}

func TestValidateStorageClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*storagev1.StorageClass)
		wants  []want
	}{
		{"valid", func(*storagev1.StorageClass) {}, nil},
		{"provisioner required", func(sc *storagev1.StorageClass) { sc.Provisioner = "" }, []want{required("provisioner")}},
		{"provisioner qualified", func(sc *storagev1.StorageClass) { sc.Provisioner = "a/b/c" }, []want{invalid("provisioner")}},
		{"reclaim policy", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRecycle) }, []want{notSupported("reclaimPolicy")}},
		{"binding mode", func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = new(storagev1.VolumeBindingMode("Later")) }, []want{notSupported("volumeBindingMode")}},
		{"parameter key", func(sc *storagev1.StorageClass) { sc.Parameters[""] = "x" }, []want{invalid("parameters")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := validSC()
			tt.change(sc)
			expectErrors(t, ValidateCreate(sc), tt.wants...)
		})
	}
}

func TestValidateStorageClassUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*storagev1.StorageClass)
		wants  []want
	}{
		{"annotations may change", func(sc *storagev1.StorageClass) {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}, nil},
		{"provisioner", func(sc *storagev1.StorageClass) { sc.Provisioner = "example.com/slow" }, []want{forbidden("provisioner")}},
		{"parameters", func(sc *storagev1.StorageClass) { sc.Parameters["type"] = "hdd" }, []want{forbidden("parameters")}},
		{"reclaim policy", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRetain) }, []want{forbidden("reclaimPolicy")}},
		{"binding mode", func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = new(storagev1.VolumeBindingWaitForFirstConsumer)
		}, []want{invalid("volumeBindingMode")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old, sc := validSC(), validSC()
			tt.change(sc)
			expectErrors(t, ValidateUpdate(sc, old), tt.wants...)
		})
	}
}
