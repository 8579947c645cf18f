package openapi

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// benchResources is a control plane's worth of resources (21).
func benchResources() []Resource {
	res := func(gv schema.GroupVersion, kind, plural string, namespaced bool, obj, list runtime.Object, subs ...string) Resource {
		return Resource{GVK: gv.WithKind(kind), Plural: plural, Namespaced: namespaced, Subresources: subs, Object: obj, List: list}
	}
	core, apps := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion
	return append(testResources(),
		res(core, "Secret", "secrets", true, &corev1.Secret{}, &corev1.SecretList{}),
		res(core, "Node", "nodes", false, &corev1.Node{}, &corev1.NodeList{}, "status"),
		res(core, "Endpoints", "endpoints", true, &corev1.Endpoints{}, &corev1.EndpointsList{}),
		res(core, "Event", "events", true, &corev1.Event{}, &corev1.EventList{}),
		res(core, "ServiceAccount", "serviceaccounts", true, &corev1.ServiceAccount{}, &corev1.ServiceAccountList{}),
		res(core, "PersistentVolumeClaim", "persistentvolumeclaims", true, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{}, "status"),
		res(apps, "StatefulSet", "statefulsets", true, &appsv1.StatefulSet{}, &appsv1.StatefulSetList{}, "status", "scale"),
		res(apps, "DaemonSet", "daemonsets", true, &appsv1.DaemonSet{}, &appsv1.DaemonSetList{}, "status"),
		res(apps, "ControllerRevision", "controllerrevisions", true, &appsv1.ControllerRevision{}, &appsv1.ControllerRevisionList{}),
		res(batchv1.SchemeGroupVersion, "Job", "jobs", true, &batchv1.Job{}, &batchv1.JobList{}, "status"),
		res(batchv1.SchemeGroupVersion, "CronJob", "cronjobs", true, &batchv1.CronJob{}, &batchv1.CronJobList{}, "status"),
		res(coordinationv1.SchemeGroupVersion, "Lease", "leases", true, &coordinationv1.Lease{}, &coordinationv1.LeaseList{}),
		res(discoveryv1.SchemeGroupVersion, "EndpointSlice", "endpointslices", true, &discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{}),
		res(eventsv1.SchemeGroupVersion, "Event", "events", true, &eventsv1.Event{}, &eventsv1.EventList{}),
		res(networkingv1.SchemeGroupVersion, "Ingress", "ingresses", true, &networkingv1.Ingress{}, &networkingv1.IngressList{}, "status"),
		res(policyv1.SchemeGroupVersion, "PodDisruptionBudget", "poddisruptionbudgets", true, &policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudgetList{}, "status"),
		res(rbacv1.SchemeGroupVersion, "ClusterRole", "clusterroles", false, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{}),
	)
}

func TestBuildBenchResources(t *testing.T) {
	t.Parallel()
	d, err := Build(benchResources())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.groups) != 9 {
		t.Errorf("%d group-versions, want 9", len(d.groups))
	}
	// The protobuf forms are encoded on first request; check gnostic
	// accepts every document.
	if _, err := d.v2Proto.get(); err != nil {
		t.Error(err)
	}
	for key, g := range d.groups {
		if _, err := g.proto.get(); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// BenchmarkBuild measures the startup cost for a control plane's resources.
// BenchmarkProtobuf measures the one-time cost of the first protobuf requests.
func BenchmarkBuild(b *testing.B) {
	resources := benchResources()
	b.ReportAllocs()
	for b.Loop() {
		d, err := Build(resources)
		if err != nil {
			b.Fatal(err)
		}
		size := len(d.v2JSON.data) + len(d.index.data)
		for _, g := range d.groups {
			size += len(g.json.data)
		}
		b.ReportMetric(float64(size)/1e6, "MB-json")
	}
}

func BenchmarkProtobuf(b *testing.B) {
	resources := benchResources()
	for b.Loop() {
		b.StopTimer()
		d, err := Build(resources)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := d.v2Proto.get(); err != nil {
			b.Fatal(err)
		}
		for _, g := range d.groups {
			if _, err := g.proto.get(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
