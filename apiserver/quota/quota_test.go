package quota

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var now = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func pod(mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", list("cpu", "100m", "memory", "1Gi"), list("cpu", "200m"))}}}
	for _, m := range mut {
		m(p)
	}
	return p
}

func assertList(t *testing.T, got, want corev1.ResourceList) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %s, want %s", Format(got), Format(want))
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	grace := int64(30)
	deleted := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			ts := metav1.NewTime(now.Add(-ago))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
		}
	}
	f := false
	tests := []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want corev1.ResourceList
	}{
		{"pod", Pods, pod(), list("count/pods", "1", "pods", "1", "cpu", "100m", "requests.cpu", "100m",
			"memory", "1Gi", "requests.memory", "1Gi", "limits.cpu", "200m")},
		{"pod with init containers and overhead", Pods, pod(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, container("b", list("cpu", "200m"), nil))
			p.Spec.InitContainers = []corev1.Container{container("init", list("cpu", "500m", "memory", "512Mi"), nil)}
			p.Spec.Overhead = list("memory", "10Mi")
		}), list("count/pods", "1", "pods", "1", "cpu", "500m", "requests.cpu", "500m",
			"memory", "1034Mi", "requests.memory", "1034Mi", "limits.cpu", "200m")},
		{"pod with a sidecar", Pods, pod(func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			side := container("side", list("cpu", "50m"), nil)
			side.RestartPolicy = &always
			p.Spec.InitContainers = []corev1.Container{side}
		}), list("count/pods", "1", "pods", "1", "cpu", "150m", "requests.cpu", "150m",
			"memory", "1Gi", "requests.memory", "1Gi", "limits.cpu", "200m")},
		{"pod with extended resources and huge pages", Pods, pod(func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{container("a", list("example.com/gpu", "2", "hugepages-2Mi", "4Mi"), list("example.com/gpu", "2", "hugepages-2Mi", "4Mi"))}
		}), list("count/pods", "1", "pods", "1", "requests.example.com/gpu", "2", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi")},
		{"succeeded pod counts only as an object", Pods, pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), list("count/pods", "1")},
		{"failed pod", Pods, pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), list("count/pods", "1")},
		{"pod past its deletion grace", Pods, pod(deleted(time.Minute)), list("count/pods", "1")},
		{"pod within its deletion grace", Pods, pod(deleted(10 * time.Second)), list("count/pods", "1", "pods", "1", "cpu", "100m",
			"requests.cpu", "100m", "memory", "1Gi", "requests.memory", "1Gi", "limits.cpu", "200m")},
		{"cluster IP service", Services, &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			list("count/services", "1", "services", "1", "services.nodeports", "0", "services.loadbalancers", "0")},
		{"node port service", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}},
			list("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "0")},
		{"load balancer", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}},
			list("count/services", "1", "services", "1", "services.nodeports", "1", "services.loadbalancers", "1")},
		{"load balancer without node ports", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: &f, Ports: []corev1.ServicePort{{Port: 80}, {Port: 81, NodePort: 30001}}}},
			list("count/services", "1", "services", "1", "services.nodeports", "1", "services.loadbalancers", "1")},
		{"claim", PersistentVolumeClaims, &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: strPtr("gold"), Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "1500m")}}},
			list("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "2",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "2")},
		{"configmap", schema.GroupResource{Resource: "configmaps"}, &metav1.PartialObjectMetadata{}, list("count/configmaps", "1", "configmaps", "1")},
		{"secret", schema.GroupResource{Resource: "secrets"}, &corev1.Secret{}, list("count/secrets", "1", "secrets", "1")},
		{"resourcequota", schema.GroupResource{Resource: "resourcequotas"}, &corev1.ResourceQuota{}, list("count/resourcequotas", "1", "resourcequotas", "1")},
		{"deployment", schema.GroupResource{Group: "apps", Resource: "deployments"}, &metav1.PartialObjectMetadata{}, list("count/deployments.apps", "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Usage(tt.gr, tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			assertList(t, got, tt.want)
		})
	}
	if _, err := Usage(Pods, &corev1.Service{}, now); err == nil {
		t.Error("Usage of a Service as a pod: want an error")
	}
}

func strPtr(s string) *string { return &s }

func TestMatchingResources(t *testing.T) {
	t.Parallel()
	names := []corev1.ResourceName{"pods", "count/pods", "services", "requests.cpu", "configmaps", "count/configmaps",
		"count/deployments.apps", "requests.example.com/gpu", "requests.hugepages-2Mi", "requests.storage",
		"gold.storageclass.storage.k8s.io/requests.storage"}
	tests := []struct {
		gr   schema.GroupResource
		want string
	}{
		{Pods, "pods,count/pods,requests.cpu,requests.example.com/gpu,requests.hugepages-2Mi"},
		{Services, "services"},
		{schema.GroupResource{Resource: "configmaps"}, "configmaps,count/configmaps"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "count/deployments.apps"},
		{PersistentVolumeClaims, "requests.storage,gold.storageclass.storage.k8s.io/requests.storage"},
		{schema.GroupResource{Resource: "events"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.gr.String(), func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, n := range MatchingResources(tt.gr, names) {
				got = append(got, string(n))
			}
			if s := strings.Join(got, ","); s != tt.want {
				t.Errorf("got %q, want %q", s, tt.want)
			}
		})
	}
}

func TestInScopes(t *testing.T) {
	t.Parallel()
	deadline := int64(60)
	besteffort := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	burstable := pod()
	withDeadline := pod(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline })
	high := pod(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })
	quota := func(scopes []corev1.ResourceQuotaScope, exprs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
		if len(exprs) > 0 {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
		}
		return q
	}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	tests := []struct {
		name string
		q    *corev1.ResourceQuota
		gr   schema.GroupResource
		obj  runtime.Object
		want bool
	}{
		{"no scopes matches anything", quota(nil), Services, &corev1.Service{}, true},
		{"a scoped quota never matches services", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), Services, &corev1.Service{}, false},
		{"terminating", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}), Pods, withDeadline, true},
		{"terminating, no deadline", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}), Pods, burstable, false},
		{"not terminating", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), Pods, burstable, true},
		{"best effort", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), Pods, besteffort, true},
		{"best effort, burstable pod", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), Pods, burstable, false},
		{"not best effort", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}), Pods, burstable, true},
		{"all scopes must match", quota([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating}), Pods, burstable, false},
		{"priority In", quota(nil, priority(corev1.ScopeSelectorOpIn, "high", "mid")), Pods, high, true},
		{"priority In, other class", quota(nil, priority(corev1.ScopeSelectorOpIn, "low")), Pods, high, false},
		{"priority NotIn", quota(nil, priority(corev1.ScopeSelectorOpNotIn, "low")), Pods, high, true},
		{"priority NotIn, no class", quota(nil, priority(corev1.ScopeSelectorOpNotIn, "low")), Pods, burstable, true},
		{"priority Exists", quota(nil, priority(corev1.ScopeSelectorOpExists)), Pods, high, true},
		{"priority Exists, no class", quota(nil, priority(corev1.ScopeSelectorOpExists)), Pods, burstable, false},
		{"priority DoesNotExist", quota(nil, priority(corev1.ScopeSelectorOpDoesNotExist)), Pods, burstable, true},
		{"priority DoesNotExist, with class", quota(nil, priority(corev1.ScopeSelectorOpDoesNotExist)), Pods, high, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := InScopes(tt.q, tt.gr, tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("InScopes = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := InScopes(quota(nil, priority("Bogus", "x")), Pods, high); err == nil {
		t.Error("a bad operator: want an error")
	}
}

func TestMatchesReadsStatusHard(t *testing.T) {
	t.Parallel()
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "3")}}
	if ok, _ := Matches(q, Pods, pod()); ok {
		t.Error("a quota without status matched")
	}
	q.Status.Hard = list("pods", "3")
	if ok, _ := Matches(q, Pods, pod()); !ok {
		t.Error("a quota limiting pods did not match a pod")
	}
	if ok, _ := Matches(q, Services, &corev1.Service{}); ok {
		t.Error("a quota limiting pods matched a service")
	}
}

func TestTotal(t *testing.T) {
	t.Parallel()
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{
		Hard:   list("pods", "10", "count/pods", "10", "requests.cpu", "2", "limits.memory", "4Gi", "services", "5"),
		Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}}
	deadline := int64(5)
	objs := []runtime.Object{
		pod(),
		pod(func(p *corev1.Pod) { p.Name = "b" }),
		pod(func(p *corev1.Pod) { p.Name = "done"; p.Status.Phase = corev1.PodSucceeded }),
		pod(func(p *corev1.Pod) { p.Name = "deadline"; p.Spec.ActiveDeadlineSeconds = &deadline }),
	}
	got, err := Total(q, Pods, objs, now)
	if err != nil {
		t.Fatal(err)
	}
	assertList(t, got, list("pods", "2", "count/pods", "3", "requests.cpu", "200m", "limits.memory", "0"))
	if got, _ := Total(q, schema.GroupResource{Resource: "secrets"}, nil, now); got != nil {
		t.Errorf("Total of an unlimited resource = %v, want nil", got)
	}
}

func TestConstraints(t *testing.T) {
	t.Parallel()
	p := pod(func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, container("b", nil, nil))
		p.Spec.InitContainers = []corev1.Container{container("init", list("memory", "1Mi"), nil)}
	})
	tests := []struct {
		required []corev1.ResourceName
		want     string
	}{
		{[]corev1.ResourceName{"pods", "requests.storage"}, ""},
		{[]corev1.ResourceName{"requests.cpu"}, "must specify requests.cpu for: b,init"},
		{[]corev1.ResourceName{"limits.memory", "cpu"}, "must specify cpu for: b,init; limits.memory for: a,b,init"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			err := Constraints(Pods, tt.required, p)
			if got := errString(err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestArithmetic(t *testing.T) {
	t.Parallel()
	a, b := list("cpu", "1", "pods", "2"), list("cpu", "1500m", "memory", "1Gi")
	assertList(t, Add(a, b), list("cpu", "2500m", "pods", "2", "memory", "1Gi"))
	assertList(t, Subtract(a, b), list("cpu", "0", "pods", "2", "memory", "0"))
	assertList(t, Subtract(b, a), list("cpu", "500m", "pods", "0", "memory", "1Gi"))
	assertList(t, Covered(list("pods", "5"), a), list("pods", "2"))
	assertList(t, RemoveZeros(list("cpu", "0", "pods", "1")), list("pods", "1"))
	if got := Exceeded(list("cpu", "1", "pods", "3"), list("cpu", "2", "pods", "3", "memory", "9")); len(got) != 1 || got[0] != "cpu" {
		t.Errorf("Exceeded = %v, want [cpu]", got)
	}
	if got := Negative(list("cpu", "-1", "pods", "1")); len(got) != 1 || got[0] != "cpu" {
		t.Errorf("Negative = %v, want [cpu]", got)
	}
	if got := Format(list("pods", "1", "limits.cpu", "2")); got != "limits.cpu=2,pods=1" {
		t.Errorf("Format = %q", got)
	}
}
