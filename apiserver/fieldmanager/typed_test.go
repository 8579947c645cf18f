package fieldmanager

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

func typedPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "img",
				Ports:        []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "tok", MountPath: "/var/run/secrets"}}}},
			Volumes: []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}},
	}
}

// The unvalidated conversion of a Go-typed object gives the same field set
// as the validated one, duplicates included, from the first object of a
// kind on.
func TestTrustedTypedSameFields(t *testing.T) {
	plain := applyconfigurations.NewTypeConverter(scheme.Scheme)
	trusted := newTrustedTyped(plain)
	deploy := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: &intstr.IntOrString{Type: intstr.String, StrVal: "25%"}}}}}
	for _, obj := range []runtime.Object{typedPod(), typedPod(), deploy, deploy} {
		want, err := plain.ObjectToTyped(obj, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trusted.ObjectToTyped(obj, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		if got.TypeRef().NamedType == nil || *got.TypeRef().NamedType != *want.TypeRef().NamedType {
			t.Fatalf("%T: type %v, want %v", obj, got.TypeRef().NamedType, want.TypeRef().NamedType)
		}
		wantSet, err := want.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		gotSet, err := got.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		if !gotSet.Equals(wantSet) {
			t.Errorf("%T: fields\n%s\nwant\n%s", obj, gotSet, wantSet)
		}
	}
	if n := len(trusted.types); n != 2 {
		t.Errorf("%d cached types, want 2 (pod, deployment)", n)
	}
}

// What may not conform is still validated: an object converted without
// AllowDuplicates (an apply configuration) and unstructured objects.
func TestTrustedTypedValidatesTheRest(t *testing.T) {
	trusted := newTrustedTyped(applyconfigurations.NewTypeConverter(scheme.Scheme))
	if _, err := trusted.ObjectToTyped(typedPod(), typed.AllowDuplicates); err != nil {
		t.Fatal(err)
	}
	if _, err := trusted.ObjectToTyped(typedPod()); err == nil {
		t.Error("a typed pod with a duplicate port converted without AllowDuplicates: no error")
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"containers": "not a list"}}}
	if _, err := trusted.ObjectToTyped(bad, typed.AllowDuplicates); err == nil {
		t.Error("an unstructured pod of the wrong shape: no error")
	}
}
