package openapi

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// testResources is the small resource list the tests serve.
func testResources() []Resource {
	core := corev1.SchemeGroupVersion
	apps := appsv1.SchemeGroupVersion
	return []Resource{
		{GVK: core.WithKind("Pod"), Plural: "pods", Namespaced: true,
			Subresources: []string{"status", "binding", "eviction", "log", "exec"},
			Object:       &corev1.Pod{}, List: &corev1.PodList{}},
		{GVK: core.WithKind("Namespace"), Plural: "namespaces",
			Subresources: []string{"status", "finalize"},
			Object:       &corev1.Namespace{}, List: &corev1.NamespaceList{}},
		{GVK: core.WithKind("Service"), Plural: "services", Namespaced: true,
			Subresources: []string{"status"},
			Object:       &corev1.Service{}, List: &corev1.ServiceList{}},
		{GVK: core.WithKind("ConfigMap"), Plural: "configmaps", Namespaced: true,
			Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}},
		{GVK: apps.WithKind("Deployment"), Plural: "deployments", Namespaced: true,
			Subresources: []string{"status", "scale"},
			Object:       &appsv1.Deployment{}, List: &appsv1.DeploymentList{}},
		{GVK: apps.WithKind("ReplicaSet"), Plural: "replicasets", Namespaced: true,
			Subresources: []string{"status", "scale"},
			Object:       &appsv1.ReplicaSet{}, List: &appsv1.ReplicaSetList{}},
	}
}

// mustBuild builds the documents of testResources.
func mustBuild(t testing.TB) *Documents {
	t.Helper()
	d, err := Build(testResources())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return d
}
