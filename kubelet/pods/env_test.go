package pods

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// fakeGetter serves ConfigMaps and Secrets from maps keyed by
// namespace/name; err, when set, fails every call.
type fakeGetter struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	err        error
	calls      int
}

func (f *fakeGetter) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeGetter) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func newFakeGetter() *fakeGetter {
	return &fakeGetter{
		configMaps: map[string]*corev1.ConfigMap{
			"ns/cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3", "bad=key": "x"}, BinaryData: map[string][]byte{"BIN": []byte("bytes")}},
		},
		secrets: map[string]*corev1.Secret{
			"ns/creds": {Data: map[string][]byte{"USER": []byte("admin"), "PASS": []byte("s3cret")}},
		},
	}
}

func envPod() *corev1.Pod {
	p := testPod("app")
	p.Labels = map[string]string{"app": "web", "tier": "front"}
	p.Annotations = map[string]string{"note": `say "hi"`}
	p.Spec.ServiceAccountName = "robot"
	p.Status.PodIP, p.Status.HostIP = "10.0.0.1", "192.168.0.1"
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	return p
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func resourceEnv(name, res, divisor string) corev1.EnvVar {
	sel := &corev1.ResourceFieldSelector{Resource: res}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: sel}}
}

func cmKey(name, cm, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key, Optional: &optional}}}
}

func secretKey(name, s, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: s}, Key: key, Optional: &optional}}}
}

func envString(kvs []runtime.KeyValue) string {
	var b strings.Builder
	for _, kv := range kvs {
		b.WriteString(kv.Key + "=" + kv.Value + ";")
	}
	return b.String()
}

func TestResolveEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     []corev1.EnvVar
		envFrom []corev1.EnvFromSource
		in      EnvInput
		want    string
		wantErr string
	}{
		{
			name: "values expand earlier variables only",
			env:  []corev1.EnvVar{{Name: "A", Value: "a"}, {Name: "B", Value: "$(A)-$(C)"}, {Name: "C", Value: "c"}, {Name: "D", Value: "$$(A)"}},
			want: "A=a;B=a-$(C);C=c;D=$(A);",
		},
		{
			name: "envFrom with prefix, sorted keys, invalid names skipped; env overrides in place",
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
				{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			},
			env:  []corev1.EnvVar{{Name: "MODE", Value: "slow-$(LEVEL)"}, {Name: "URL", Value: "$(DB_USER):$(DB_PASS)"}},
			want: "LEVEL=3;MODE=slow-3;DB_PASS=s3cret;DB_USER=admin;URL=admin:s3cret;",
		},
		{
			name: "configMap and secret keys",
			env:  []corev1.EnvVar{cmKey("M", "cfg", "MODE", false), cmKey("B", "cfg", "BIN", false), secretKey("U", "creds", "USER", false)},
			want: "M=fast;B=bytes;U=admin;",
		},
		{
			name: "optional missing objects and keys are skipped",
			env: []corev1.EnvVar{cmKey("A", "nope", "k", true), cmKey("B", "cfg", "nokey", true),
				secretKey("C", "nope", "k", true), secretKey("D", "creds", "nokey", true), {Name: "E", Value: "e"}},
			envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr(true)}}},
			want:    "E=e;",
		},
		{
			name:    "missing configmap",
			env:     []corev1.EnvVar{cmKey("A", "x", "k", false)},
			wantErr: `configmap "x" not found`,
		},
		{
			name:    "missing configmap in envFrom",
			envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}},
			wantErr: `configmap "x" not found`,
		},
		{
			name:    "missing key",
			env:     []corev1.EnvVar{cmKey("A", "cfg", "nokey", false)},
			wantErr: "couldn't find key nokey in ConfigMap ns/cfg",
		},
		{
			name:    "missing secret",
			env:     []corev1.EnvVar{secretKey("A", "y", "k", false)},
			wantErr: `secret "y" not found`,
		},
		{
			name:    "missing secret key",
			env:     []corev1.EnvVar{secretKey("A", "creds", "k", false)},
			wantErr: "couldn't find key k in Secret ns/creds",
		},
		{
			name: "field refs",
			env: []corev1.EnvVar{fieldEnv("N", "metadata.name"), fieldEnv("NS", "metadata.namespace"), fieldEnv("U", "metadata.uid"),
				fieldEnv("L", "metadata.labels['app']"), fieldEnv("LM", "metadata.labels['missing']"), fieldEnv("AN", `metadata.annotations["note"]`),
				fieldEnv("NODE", "spec.nodeName"), fieldEnv("SA", "spec.serviceAccountName"),
				fieldEnv("IP", "status.podIP"), fieldEnv("IPS", "status.podIPs"), fieldEnv("H", "status.hostIP"), fieldEnv("HS", "status.hostIPs")},
			want: `N=web;NS=ns;U=uid-1;L=web;LM=;AN=say "hi";NODE=node-1;SA=robot;IP=10.0.0.1;IPS=10.0.0.1;H=192.168.0.1;HS=192.168.0.1;`,
		},
		{
			name: "sandbox and node addresses win over the status",
			env:  []corev1.EnvVar{fieldEnv("IP", "status.podIP"), fieldEnv("IPS", "status.podIPs"), fieldEnv("H", "status.hostIP")},
			in:   EnvInput{PodIPs: []string{"10.1.1.1", "fd00::1"}, HostIPs: []string{"192.168.9.9"}},
			want: "IP=10.1.1.1;IPS=10.1.1.1,fd00::1;H=192.168.9.9;",
		},
		{
			name: "all labels",
			env:  []corev1.EnvVar{fieldEnv("L", "metadata.labels")},
			want: "L=app=\"web\"\ntier=\"front\";",
		},
		{
			name:    "unsupported field",
			env:     []corev1.EnvVar{fieldEnv("X", "spec.hostname")},
			wantErr: "unsupported fieldPath: spec.hostname",
		},
		{
			name: "resource refs with divisors and the node's allocatable for missing limits",
			env: []corev1.EnvVar{resourceEnv("RC", "requests.cpu", ""), resourceEnv("RCM", "requests.cpu", "1m"),
				resourceEnv("LM", "limits.memory", "1Mi"), resourceEnv("RM", "requests.memory", ""),
				resourceEnv("LC", "limits.cpu", ""), resourceEnv("LCM", "limits.cpu", "1m")},
			in:   EnvInput{NodeAllocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m")}},
			want: "RC=1;RCM=250;LM=128;RM=67108864;LC=4;LCM=3500;",
		},
		{
			name:    "unsupported resource",
			env:     []corev1.EnvVar{resourceEnv("X", "limits.gpu", "")},
			wantErr: "unsupported container resource: limits.gpu",
		},
		{
			name: "service variables: referable, not overriding",
			env:  []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}, {Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}},
			in:   EnvInput{ServiceEnv: []runtime.KeyValue{{Key: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"}, {Key: "KUBERNETES_SERVICE_PORT", Value: "443"}}},
			want: "KUBERNETES_SERVICE_HOST=mine;URL=https://mine:443;KUBERNETES_SERVICE_PORT=443;",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := envPod()
			pod.Spec.Containers[0].Env, pod.Spec.Containers[0].EnvFrom = tc.env, tc.envFrom
			if tc.in.Getter == nil {
				tc.in.Getter = newFakeGetter()
			}
			got, err := ResolveEnv(context.Background(), pod, &pod.Spec.Containers[0], tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr && !strings.HasSuffix(err.Error(), ": "+tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := envString(got); s != tc.want {
				t.Fatalf("env = %q\nwant  %q", s, tc.want)
			}
		})
	}
}

func TestResolveEnvGetterErrorsAndCache(t *testing.T) {
	t.Parallel()
	pod := envPod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{cmKey("A", "cfg", "MODE", false), cmKey("B", "cfg", "LEVEL", false)}
	g := newFakeGetter()
	if _, err := ResolveEnv(context.Background(), pod, &pod.Spec.Containers[0], EnvInput{Getter: g}); err != nil {
		t.Fatal(err)
	}
	if g.calls != 1 {
		t.Errorf("configmap read %d times for one resolution, want 1", g.calls)
	}
	boom := errors.New("connection refused")
	_, err := ResolveEnv(context.Background(), pod, &pod.Spec.Containers[0], EnvInput{Getter: &fakeGetter{err: boom}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `getting configmap "cfg"`) {
		t.Fatalf("err = %v, want wrapped getter error", err)
	}
	if _, err := ResolveEnv(context.Background(), pod, &pod.Spec.Containers[0], EnvInput{}); err == nil {
		t.Fatal("no getter: no error")
	}
	if _, err := ResolveEnv(context.Background(), nil, nil, EnvInput{}); err == nil {
		t.Fatal("nil pod: no error")
	}
}

func TestFieldRefValueAPIVersion(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if v, err := FieldRefValue(pod, &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}, nil, nil); err != nil || v != "p" {
		t.Fatalf("v1: %q %v", v, err)
	}
	if _, err := FieldRefValue(pod, &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}, nil, nil); err == nil {
		t.Fatal("v2: no error")
	}
	for _, bad := range []string{"metadata.labels[app]", "metadata.labels['app\"]", "metadata.labels['", "metadata.labels[]"} {
		if _, err := FieldRefValue(pod, &corev1.ObjectFieldSelector{FieldPath: bad}, nil, nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
