package binder

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers/volume"
)

var rwo = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}

// claim is a Pending claim ns/data (uid c1) of class asking for size.
func claim(class *string, size string, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "c1", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class, AccessModes: rwo,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// pv is an Available volume of class and size.
func pv(name, class, size string, mods ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class, AccessModes: rwo,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

func claimedBy(ns, name string, uid types.UID) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: name, UID: uid}
		v.Status.Phase = corev1.VolumeBound
	}
}

func onNode(node string) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode,
		ReclaimPolicy: new(corev1.PersistentVolumeReclaimDelete)}
}

func selectedNode(n string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[volume.AnnSelectedNode] = n
	}
}

func names(pvs ...*corev1.PersistentVolume) string {
	if len(pvs) == 0 || pvs[0] == nil {
		return ""
	}
	return pvs[0].Name
}
