package admission

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// namespacePodMap is a PodLister over fixed pods.
type namespacePodMap map[string][]*corev1.Pod

func (m namespacePodMap) ListPods(_ context.Context, namespace string) ([]*corev1.Pod, error) {
	return m[namespace], nil
}

func withPrivileged(p *corev1.Pod) {
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

func psPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestPodSecurity(t *testing.T) {
	t.Parallel()
	nss := namespaceMap{
		"plain":      labelledNamespace("plain", nil),
		"restricted": labelledNamespace("restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
		"baseline":   labelledNamespace("baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}),
		"warned": labelledNamespace("warned", map[string]string{
			"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/warn-version": "v1.30"}),
		"pinned": labelledNamespace("pinned", map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.33"}),
	}
	existing := namespacePodMap{"plain": {psPod("root", withPrivileged), psPod("ok")}}
	req := func(op auth.Operation, group, resource, sub, ns string, obj, old runtime.Object) *auth.AdmissionRequest {
		name := ""
		if obj != nil {
			name = obj.(metav1.Object).GetName()
		}
		return &auth.AdmissionRequest{Operation: op, Subresource: sub, Object: obj, OldObject: old,
			Attributes: auth.Attributes{User: auth.User{Name: "alice"}, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}}
	}
	pod := func(op auth.Operation, ns string, obj, old *corev1.Pod) *auth.AdmissionRequest {
		if old == nil {
			return req(op, "", "pods", "", ns, obj, nil)
		}
		return req(op, "", "pods", "", ns, obj, old)
	}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: psPod("", withPrivileged).Spec}}}
	relabel := func(labels map[string]string) *auth.AdmissionRequest {
		return req(auth.Update, "", "namespaces", "", "", labelledNamespace("plain", labels), labelledNamespace("plain", nil))
	}
	const restrictedViolations = `privileged (container "c" must not set securityContext.privileged=true), ` +
		`allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	tests := []struct {
		name         string
		req          *auth.AdmissionRequest
		code         int32
		msg          string
		wantWarnings []string
	}{
		{name: "privileged pod in a restricted namespace", req: pod(auth.Create, "restricted", psPod("x", withPrivileged), nil),
			code: http.StatusForbidden, msg: `pods "x" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedViolations},
		{name: "privileged pod in a baseline namespace", req: pod(auth.Create, "baseline", psPod("x", withPrivileged), nil),
			code: http.StatusForbidden, msg: `pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`},
		{name: "plain busybox in a baseline namespace", req: pod(auth.Create, "baseline", psPod("x"), nil)},
		{name: "plain busybox in a pinned baseline namespace", req: pod(auth.Create, "pinned", psPod("x"), nil)},
		{name: "privileged pod in an unlabelled namespace", req: pod(auth.Create, "plain", psPod("x", withPrivileged), nil)},
		{name: "warn mode", req: pod(auth.Create, "warned", psPod("x", withPrivileged), nil),
			wantWarnings: []string{`would violate PodSecurity "baseline:v1.30": privileged (container "c" must not set securityContext.privileged=true)`}},
		{name: "status updates are not checked", req: func() *auth.AdmissionRequest {
			r := pod(auth.Update, "restricted", psPod("x", withPrivileged), psPod("x", withPrivileged))
			r.Subresource = "status"
			return r
		}()},
		{name: "label-only update is not checked", req: pod(auth.Update, "restricted", psPod("x", withPrivileged, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), psPod("x", withPrivileged))},
		{name: "image update is checked", req: pod(auth.Update, "restricted", psPod("x", withPrivileged, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:2" }), psPod("x", withPrivileged)),
			code: http.StatusForbidden, msg: `pods "x" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedViolations},
		{name: "deployment templates only warn", req: req(auth.Create, "apps", "deployments", "", "restricted", deployment, nil),
			wantWarnings: []string{`would violate PodSecurity "restricted:latest": ` + restrictedViolations}},
		{name: "deletes pass", req: &auth.AdmissionRequest{Operation: auth.Delete, Attributes: auth.Attributes{Resource: "pods", Namespace: "restricted", Name: "x"}, OldObject: psPod("x", withPrivileged)}},
		{name: "other resources pass", req: req(auth.Create, "", "configmaps", "", "missing", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, nil)},
		{name: "namespace with a bad label", req: req(auth.Create, "", "namespaces", "", "", labelledNamespace("bad", map[string]string{"pod-security.kubernetes.io/enforce": "strict"}), nil),
			code: http.StatusUnprocessableEntity, msg: `Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`},
		{name: "tightening a namespace warns about its pods", req: relabel(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}),
			wantWarnings: []string{
				`existing pods in namespace "plain" violate the new PodSecurity enforce level "baseline:latest"`,
				`root: privileged`,
			}},
	}
	plugin, err := NewPodSecurity(nss, existing)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := plugin.Admit(context.Background(), tc.req)
			expectStatus(t, err, tc.code, tc.msg)
			if !reflect.DeepEqual(tc.req.Warnings, tc.wantWarnings) {
				t.Errorf("warnings = %q, want %q", tc.req.Warnings, tc.wantWarnings)
			}
		})
	}
}

func TestBuildDefaultPlugins(t *testing.T) {
	t.Parallel()
	factories := map[string]func() (auth.Admitter, error){
		PluginLimitRanger:   func() (auth.Admitter, error) { return namedAdmitter("LimitRanger"), nil },
		PluginResourceQuota: func() (auth.Admitter, error) { return namedAdmitter("ResourceQuota"), nil },
	}
	chain, err := Build(DefaultPlugins(), Deps{Namespaces: namespaceMap{}, ServiceAccounts: &accountMap{}, Pods: podMap{}, Factories: factories})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range chain {
		got = append(got, reflect.TypeOf(a).String())
	}
	want := []string{"*admission.NamespaceLifecycle", "admission.namedAdmitter", "admission.ServiceAccount", "admission.NodeRestriction",
		"admission.Priority", "admission.DefaultTolerationSeconds", "admission.DefaultStorageClass", "admission.StorageObjectInUseProtection",
		"*admission.PodSecurity", "admission.namedAdmitter"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chain = %v, want %v", got, want)
	}
	if chain[9] != namedAdmitter("ResourceQuota") {
		t.Fatalf("last plugin = %v, want ResourceQuota", chain[9])
	}
}
