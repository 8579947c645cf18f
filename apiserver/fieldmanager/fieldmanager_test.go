package fieldmanager

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/apiserver/resource"
)

func managers(t *testing.T) (*Managers, map[string]*resource.Resource) {
	t.Helper()
	all := resource.Builtin()
	m, err := New(all)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*resource.Resource{}
	for _, r := range all {
		by[r.Plural] = r
	}
	return m, by
}

func patch(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func fieldsOf(t *testing.T, obj runtime.Object, manager string, op metav1.ManagedFieldsOperationType) string {
	t.Helper()
	m, err := metaOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.GetManagedFields() {
		if e.Manager == manager && e.Operation == op {
			return string(e.FieldsV1.Raw)
		}
	}
	return ""
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta(), nil
}

// Every stored built-in kind gets a manager described by upstream's
// schema, and status gets its own where served; a binding gets none.
func TestNewCoversBuiltins(t *testing.T) {
	m, by := managers(t)
	for _, res := range by {
		if res.CreateOnly {
			continue
		}
		if m.For(res, "") == nil {
			t.Errorf("%s: no field manager", res.Plural)
		}
		if !knownToSchema(res) {
			t.Errorf("%s: not in client-go's schema", res.Plural)
		}
		if res.Serves(resource.Status) && m.For(res, resource.Status) == nil {
			t.Errorf("%s/status: no field manager", res.Plural)
		}
		if m.For(res, resource.Binding) != nil {
			t.Errorf("%s/binding: a field manager (upstream records none)", res.Plural)
		}
	}
}

func TestApplyConflictsAndForce(t *testing.T) {
	m, by := managers(t)
	res := by["deployments"]
	fm := m.For(res, "")
	empty := &appsv1.Deployment{}
	empty.SetGroupVersionKind(res.GVK)
	cfg := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: nginx, ports: [{containerPort: 80}]}
`
	obj, err := fm.Apply(empty, patch(t, cfg), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		t.Fatalf("apply returned %T, want the typed object", obj)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("applied %+v", d.Spec)
	}
	// Defaults run on the result, as upstream's.
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("strategy not defaulted: %q", d.Spec.Strategy.Type)
	}
	if f := fieldsOf(t, d, "alice", metav1.ManagedFieldsOperationApply); !strings.Contains(f, `"k:{\"name\":\"web\"}"`) {
		t.Errorf("alice's fields lack the container by key: %s", f)
	}

	// A sidecar from bob merges into the containers list by name.
	side := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  template:
    spec:
      containers:
      - {name: proxy, image: envoy}
`
	obj, err = fm.Apply(d, patch(t, side), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	d = obj.(*appsv1.Deployment)
	if n := len(d.Spec.Template.Spec.Containers); n != 2 {
		t.Fatalf("%d containers after bob's sidecar", n)
	}

	// bob changing replicas conflicts with alice; force takes it.
	bump := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec: {replicas: 5}\n"
	_, err = fm.Apply(d, patch(t, bump), "bob", false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice"`) || !strings.Contains(err.Error(), ".spec.replicas") {
		t.Fatalf("want a conflict with alice on .spec.replicas, got %v", err)
	}
	obj, err = fm.Apply(d, patch(t, bump), "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := *obj.(*appsv1.Deployment).Spec.Replicas; got != 5 {
		t.Fatalf("forced replicas %d", got)
	}
	if f := fieldsOf(t, obj, "alice", metav1.ManagedFieldsOperationApply); strings.Contains(f, "f:replicas") {
		t.Errorf("alice still owns replicas after bob forced it: %s", f)
	}

	// Unknown fields are refused.
	if _, err := fm.Apply(d, patch(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {bogus: 1}\n"), "bob", false); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field: %v", err)
	}
}

// Reset fields: status in an apply to the object is ignored, and spec in
// an apply to status.
func TestResetFields(t *testing.T) {
	m, by := managers(t)
	res := by["deployments"]
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u"}}
	live.SetGroupVersionKind(res.GVK)
	both := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec: {replicas: 4}\nstatus: {replicas: 7}\n"

	obj, err := m.For(res, "").Apply(live, patch(t, both), "user", false)
	if err != nil {
		t.Fatal(err)
	}
	if f := fieldsOf(t, obj, "user", metav1.ManagedFieldsOperationApply); strings.Contains(f, "f:status") || !strings.Contains(f, "f:spec") {
		t.Errorf("apply to the object owns %s", f)
	}
	obj, err = m.For(res, resource.Status).Apply(live, patch(t, both), "ctrl", false)
	if err != nil {
		t.Fatal(err)
	}
	if f := fieldsOf(t, obj, "ctrl", metav1.ManagedFieldsOperationApply); !strings.Contains(f, "f:status") || strings.Contains(f, "f:spec") {
		t.Errorf("apply to status owns %s", f)
	}
	if got := obj.(*appsv1.Deployment).Status.Replicas; got != 7 {
		t.Errorf("status replicas %d", got)
	}
}

// Updates record the fields they changed; a no-op records nothing new.
func TestUpdateRecordsFields(t *testing.T) {
	m, by := managers(t)
	res := by["configmaps"]
	fm := m.For(res, "")
	empty := &corev1.ConfigMap{}
	empty.SetGroupVersionKind(res.GVK)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	cm.SetGroupVersionKind(res.GVK)
	created := fm.UpdateNoErrors(empty, cm, "creator").(*corev1.ConfigMap)
	if f := fieldsOf(t, created, "creator", metav1.ManagedFieldsOperationUpdate); !strings.Contains(f, `"f:a"`) {
		t.Fatalf("create recorded %s", f)
	}
	next := created.DeepCopy()
	next.Data["b"] = "2"
	updated := fm.UpdateNoErrors(created, next, "editor").(*corev1.ConfigMap)
	if f := fieldsOf(t, updated, "editor", metav1.ManagedFieldsOperationUpdate); !strings.Contains(f, `"f:b"`) || strings.Contains(f, `"f:a"`) {
		t.Fatalf("update recorded %s", f)
	}
	same := fm.UpdateNoErrors(updated, updated.DeepCopy(), "idle").(*corev1.ConfigMap)
	if f := fieldsOf(t, same, "idle", metav1.ManagedFieldsOperationUpdate); f != "" {
		t.Fatalf("no-op update recorded %s", f)
	}
}

// An object client-side apply made can be applied server-side by kubectl
// with changed values: the fields its last-applied annotation names are
// taken over, not reported as conflicts.
func TestTakeOverClientSideApply(t *testing.T) {
	m, by := managers(t)
	res := by["configmaps"]
	fm := m.For(res, "")
	empty := &corev1.ConfigMap{}
	empty.SetGroupVersionKind(res.GVK)
	last := `{"apiVersion":"v1","data":{"mode":"old"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"legacy","namespace":"default"}}`
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "default",
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: last}}, Data: map[string]string{"mode": "old"}}
	cm.SetGroupVersionKind(res.GVK)
	live := fm.UpdateNoErrors(empty, cm, "kubectl-client-side-apply")
	obj, err := fm.Apply(live, patch(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: legacy, namespace: default}\ndata: {mode: new}\n"), "kubectl", false)
	if err != nil {
		t.Fatalf("take-over: %v", err)
	}
	got := obj.(*corev1.ConfigMap)
	if got.Data["mode"] != "new" {
		t.Fatalf("mode %q", got.Data["mode"])
	}
	if !strings.Contains(got.Annotations[corev1.LastAppliedConfigAnnotation], `"new"`) {
		t.Errorf("last-applied not updated: %q", got.Annotations[corev1.LastAppliedConfigAnnotation])
	}
}

func TestResetFieldPaths(t *testing.T) {
	_, by := managers(t)
	for _, tc := range []struct {
		plural string
		sub    resource.Subresource
		want   []string
		absent []string
	}{
		{"deployments", "", []string{".status"}, []string{".spec"}},
		{"deployments", resource.Status, []string{".spec", ".metadata.labels"}, []string{".status"}},
		{"configmaps", "", nil, []string{".data"}},
		{"nodes", resource.Status, []string{".spec"}, []string{".status"}},
	} {
		t.Run(tc.plural+"/"+string(tc.sub), func(t *testing.T) {
			sets := resetFields(by[tc.plural], tc.sub)
			var s string
			for _, set := range sets {
				s = set.String()
			}
			for _, w := range tc.want {
				if !strings.Contains(s, w+"\n") && !strings.HasSuffix(s, w) {
					t.Errorf("reset fields %q lack %s", s, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(s, a+"\n") || strings.HasSuffix(s, a) {
					t.Errorf("reset fields %q have %s", s, a)
				}
			}
		})
	}
}

// benchPod is a pod like the ones a ReplicaSet creates.
func benchPod() *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default", UID: "u",
			Labels: map[string]string{"app": "bench", "pod-template-hash": "5d8f9c7b6"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		}}},
	}
	p.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return p
}

// BenchmarkPodCreateFields is the field tracking of one pod create.
func BenchmarkPodCreateFields(b *testing.B) {
	m, err := New(resource.Builtin())
	if err != nil {
		b.Fatal(err)
	}
	var res *resource.Resource
	for _, r := range resource.Builtin() {
		if r.Plural == "pods" {
			res = r
		}
	}
	fm := m.byRes[findRes(m, res)][""]
	empty := &corev1.Pod{}
	empty.SetGroupVersionKind(res.GVK)
	b.ReportAllocs()
	for b.Loop() {
		fm.UpdateNoErrors(empty, benchPod(), "kube-controller-manager")
	}
}

// BenchmarkPodStatusFields is the field tracking of one pod status update.
func BenchmarkPodStatusFields(b *testing.B) {
	m, err := New(resource.Builtin())
	if err != nil {
		b.Fatal(err)
	}
	var res *resource.Resource
	for _, r := range resource.Builtin() {
		if r.Plural == "pods" {
			res = r
		}
	}
	res = findRes(m, res)
	empty := &corev1.Pod{}
	empty.SetGroupVersionKind(res.GVK)
	// The pod as stored: defaulted, with the ServiceAccount admission
	// plugin's token volume.
	pod := benchPod()
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	res.Default(pod)
	live := m.byRes[res][""].UpdateNoErrors(empty, pod, "kube-controller-manager").(*corev1.Pod)
	next := live.DeepCopy()
	next.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.k8s.io/pause:3.10"}}}
	fm := m.byRes[res][resource.Status]
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fm.UpdateNoErrors(live, next.DeepCopy(), "kubelet")
		}
	})
	b.Run("ForStatusUpdate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fm.UpdateNoErrors(m.ForStatusUpdate(res, live), m.ForStatusUpdate(res, next.DeepCopy()), "kubelet")
		}
	})
}

// findRes returns the row of m with res's kind.
func findRes(m *Managers, res *resource.Resource) *resource.Resource {
	for r := range m.byRes {
		if r.GVK == res.GVK {
			return r
		}
	}
	return nil
}

// A status update compared without spec (ForStatusUpdate) records the
// same managed fields as one compared whole: spec is a reset field of the
// status subresource, so every change to it is dropped either way.
func TestForStatusUpdateRecordsTheSame(t *testing.T) {
	m, by := managers(t)
	for _, tc := range []struct {
		plural string
		live   func() runtime.Object
		write  func(runtime.Object)
	}{
		{"pods", func() runtime.Object {
			p := benchPod()
			p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
			return p
		}, func(o runtime.Object) {
			p := o.(*corev1.Pod)
			p.Labels["ready"] = "yes"
			p.Spec.Containers[0].Image = "changed" // a status write cannot change it
			p.Spec.NodeName = "n1"
			p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.0.0.1"
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		}},
		{"nodes", func() runtime.Object {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}},
				Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"}}
			return n
		}, func(o runtime.Object) {
			n := o.(*corev1.Node)
			n.Spec.Unschedulable = true
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}},
		{"deployments", func() runtime.Object {
			r := int32(2)
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: appsv1.DeploymentSpec{Replicas: &r}}
		}, func(o runtime.Object) {
			d := o.(*appsv1.Deployment)
			d.Status.Replicas, d.Status.ReadyReplicas = 2, 1
			d.Annotations = map[string]string{"note": "x"}
		}},
	} {
		t.Run(tc.plural, func(t *testing.T) {
			res := by[tc.plural]
			empty := res.New()
			empty.GetObjectKind().SetGroupVersionKind(res.GVK)
			obj := tc.live()
			obj.GetObjectKind().SetGroupVersionKind(res.GVK)
			live := m.For(res, "").UpdateNoErrors(empty, obj, "creator")
			next := live.DeepCopyObject()
			tc.write(next)
			fm := m.For(res, resource.Status)
			whole := fm.UpdateNoErrors(live.DeepCopyObject(), next.DeepCopyObject(), "writer")

			liveCopy, nextCopy := live.DeepCopyObject(), next.DeepCopyObject()
			trimmedLive, trimmedNext := m.ForStatusUpdate(res, liveCopy), m.ForStatusUpdate(res, nextCopy)
			if trimmedLive == liveCopy || trimmedNext == nextCopy {
				t.Fatal("ForStatusUpdate returned its input, not a copy without spec")
			}
			if !equality(liveCopy, live) || !equality(nextCopy, next) {
				t.Fatal("ForStatusUpdate changed its input")
			}
			trimmed := fm.UpdateNoErrors(trimmedLive, trimmedNext, "writer")

			got, want := entries(t, trimmed), entries(t, whole)
			if got != want {
				t.Errorf("managed fields compared without spec:\n%s\nwant (compared whole):\n%s", got, want)
			}
			if w := fieldsOf(t, whole, "writer", metav1.ManagedFieldsOperationUpdate); !strings.Contains(w, `"f:status"`) || strings.Contains(w, `"f:spec"`) {
				t.Errorf("the status writer's fields %s: want status, no spec", w)
			}
		})
	}
	if cm := (&corev1.ConfigMap{}); m.ForStatusUpdate(by["configmaps"], cm) != cm {
		t.Error("a kind without status was copied")
	}
}

// entries prints an object's managed fields without their times.
func entries(t *testing.T, obj runtime.Object) string {
	t.Helper()
	m, _ := metaOf(obj)
	var b strings.Builder
	for _, e := range m.GetManagedFields() {
		fmt.Fprintf(&b, "%s %s %s %s\n", e.Manager, e.Operation, e.Subresource, e.FieldsV1.Raw)
	}
	return b.String()
}

func equality(a, b runtime.Object) bool { return apiequality.Semantic.DeepEqual(a, b) }
