package admission

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// accountMap is a ServiceAccountGetter over fixed accounts keyed
// "namespace/name"; it counts lookups and can hide an account for its
// first hidden lookups.
type accountMap struct {
	accounts map[string]*corev1.ServiceAccount
	hidden   int64
	lookups  atomic.Int64
}

func (m *accountMap) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	n := m.lookups.Add(1)
	if sa, ok := m.accounts[namespace+"/"+name]; ok && n > m.hidden {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(serviceAccountResource, name)
}

func saPod(mutate func(*corev1.Pod)) *auth.AdmissionRequest {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "app"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	return &auth.AdmissionRequest{Operation: auth.Create, Attributes: auth.Attributes{Resource: "pods", Namespace: "app", Name: "p"}, Object: pod}
}

func TestServiceAccount(t *testing.T) {
	t.Parallel()
	accounts := map[string]*corev1.ServiceAccount{
		"app/default":  {ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "app"}},
		"app/builder":  {ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "app"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}},
		"app/no-mount": {ObjectMeta: metav1.ObjectMeta{Name: "no-mount", Namespace: "app"}, AutomountServiceAccountToken: ptr.To(false)},
	}
	tests := []struct {
		name       string
		req        *auth.AdmissionRequest
		hidden     int64
		code       int32
		msg        string
		wantSA     string
		wantMount  bool     // every container mounts the token volume
		wantPull   []string // imagePullSecrets after admission
		wantLookup int64
	}{
		{name: "defaults to the default account and mounts the token", req: saPod(nil),
			wantSA: "default", wantMount: true, wantLookup: 1},
		{name: "named account, pull secrets copied", req: saPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }),
			wantSA: "builder", wantMount: true, wantPull: []string{"registry"}, wantLookup: 1},
		{name: "the pod's pull secrets are kept", req: saPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "builder"
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
		}), wantSA: "builder", wantMount: true, wantPull: []string{"mine"}, wantLookup: 1},
		{name: "account opts out", req: saPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "no-mount" }),
			wantSA: "no-mount", wantLookup: 1},
		{name: "pod opts in over the account", req: saPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "no-mount"
			p.Spec.AutomountServiceAccountToken = ptr.To(true)
		}), wantSA: "no-mount", wantMount: true, wantLookup: 1},
		{name: "pod opts out", req: saPod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) }),
			wantSA: "default", wantLookup: 1},
		{name: "missing account", req: saPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" }),
			code: http.StatusForbidden, msg: `pods "p" is forbidden: error looking up service account app/ghost: serviceaccount "ghost" not found`, wantLookup: 1},
		{name: "default account appears on the third lookup", req: saPod(nil), hidden: 2,
			wantSA: "default", wantMount: true, wantLookup: 3},
		{name: "default account never appears", req: func() *auth.AdmissionRequest {
			r := saPod(nil)
			r.Attributes.Namespace = "empty"
			return r
		}(), code: http.StatusForbidden, msg: `pods "p" is forbidden: error looking up service account empty/default: serviceaccount "default" not found`, wantLookup: 10},
		{name: "mirror pod left alone", req: saPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"}
		})},
		{name: "mirror pod with an account", req: saPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"}
			p.Spec.ServiceAccountName = "builder"
		}), code: http.StatusForbidden, msg: `pods "p" is forbidden: a mirror pod may not reference service accounts`},
		{name: "mirror pod with a secret", req: saPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		}), code: http.StatusForbidden, msg: `pods "p" is forbidden: a mirror pod may not reference secrets`},
		{name: "mirror pod with a token projection", req: saPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"}
			p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}}}
		}), code: http.StatusForbidden, msg: `pods "p" is forbidden: a mirror pod may not use ServiceAccountToken volume projections`},
		{name: "update left alone", req: func() *auth.AdmissionRequest { r := saPod(nil); r.Operation = auth.Update; return r }()},
		{name: "status left alone", req: func() *auth.AdmissionRequest { r := saPod(nil); r.Subresource = "status"; return r }()},
		{name: "other resources left alone", req: &auth.AdmissionRequest{Operation: auth.Create,
			Attributes: auth.Attributes{Resource: "services", Namespace: "app"}, Object: &corev1.Service{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getter := &accountMap{accounts: accounts, hidden: tc.hidden}
			var pauses atomic.Int64
			plugin := ServiceAccount{Accounts: getter, Pause: func(context.Context) error { pauses.Add(1); return nil }}
			err := plugin.Admit(context.Background(), tc.req)
			expectStatus(t, err, tc.code, tc.msg)
			if got := getter.lookups.Load(); got != tc.wantLookup {
				t.Errorf("lookups = %d, want %d", got, tc.wantLookup)
			}
			if got, want := pauses.Load(), max(tc.wantLookup-1, 0); got != want {
				t.Errorf("pauses = %d, want %d", got, want)
			}
			pod, ok := tc.req.Object.(*corev1.Pod)
			if err != nil || !ok {
				return
			}
			if pod.Spec.ServiceAccountName != tc.wantSA {
				t.Errorf("serviceAccountName = %q, want %q", pod.Spec.ServiceAccountName, tc.wantSA)
			}
			var pull []string
			for _, s := range pod.Spec.ImagePullSecrets {
				pull = append(pull, s.Name)
			}
			if !reflect.DeepEqual(pull, tc.wantPull) {
				t.Errorf("imagePullSecrets = %v, want %v", pull, tc.wantPull)
			}
			checkTokenMounted(t, pod, tc.wantMount)
		})
	}
}

// checkTokenMounted checks that the pod has upstream's token volume
// mounted in every container, or no such volume and mount at all.
func checkTokenMounted(t *testing.T, pod *corev1.Pod, want bool) {
	t.Helper()
	var vols []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, ServiceAccountVolumeName+"-") {
			vols = append(vols, v)
		}
	}
	if !want {
		if len(vols) > 0 {
			t.Fatalf("volumes = %+v, want no token volume", vols)
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if mountsAt(c, DefaultAPITokenMountPath) {
				t.Fatalf("container %s mounts the token", c.Name)
			}
		}
		return
	}
	if len(vols) != 1 || len(vols[0].Name) != len("kube-api-access-xxxxx") {
		t.Fatalf("token volumes = %+v, want one named kube-api-access-xxxxx", vols)
	}
	wantMount := corev1.VolumeMount{Name: vols[0].Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if n := len(c.VolumeMounts); n == 0 || !reflect.DeepEqual(c.VolumeMounts[n-1], wantMount) {
			t.Fatalf("container %s mounts %+v, want %+v last", c.Name, c.VolumeMounts, wantMount)
		}
	}
	mode, expiry := int32(420), int64(3607)
	want420 := &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}
	if !reflect.DeepEqual(vols[0].Projected, want420) {
		t.Fatalf("token volume = %+v, want %+v", vols[0].Projected, want420)
	}
}

func TestMountServiceAccountToken(t *testing.T) {
	t.Parallel()
	names := func(ns ...string) func() string {
		return func() string { n := ns[0]; ns = ns[1:]; return n }
	}
	tests := []struct {
		name        string
		pod         corev1.PodSpec
		newName     func() string
		wantVolumes []string
		wantMounts  map[string][]string // container -> mount names
	}{
		{name: "containers with a mount at the path are skipped",
			pod: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "a"},
				{Name: "b", VolumeMounts: []corev1.VolumeMount{{Name: "own", MountPath: DefaultAPITokenMountPath}}},
			}, Volumes: []corev1.Volume{{Name: "own"}}},
			newName: names("kube-api-access-aaaaa"), wantVolumes: []string{"own", "kube-api-access-aaaaa"},
			wantMounts: map[string][]string{"a": {"kube-api-access-aaaaa"}, "b": {"own"}}},
		{name: "no container needs it: no volume",
			pod: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "b", VolumeMounts: []corev1.VolumeMount{{Name: "own", MountPath: DefaultAPITokenMountPath}}},
			}, Volumes: []corev1.Volume{{Name: "own"}}},
			newName: names("kube-api-access-aaaaa"), wantVolumes: []string{"own"},
			wantMounts: map[string][]string{"b": {"own"}}},
		{name: "an existing kube-api-access volume is reused",
			pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}},
				Volumes: []corev1.Volume{{Name: "kube-api-access-zzzzz"}}},
			newName: names(), wantVolumes: []string{"kube-api-access-zzzzz"},
			wantMounts: map[string][]string{"a": {"kube-api-access-zzzzz"}}},
		{name: "a generated name that collides is drawn again",
			pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}},
				Volumes: []corev1.Volume{{Name: "data"}}},
			newName: names("data", "kube-api-access-bbbbb"), wantVolumes: []string{"data", "kube-api-access-bbbbb"},
			wantMounts: map[string][]string{"a": {"kube-api-access-bbbbb"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{Spec: tc.pod}
			mountServiceAccountToken(pod, tc.newName)
			var vols []string
			for _, v := range pod.Spec.Volumes {
				vols = append(vols, v.Name)
			}
			if !reflect.DeepEqual(vols, tc.wantVolumes) {
				t.Errorf("volumes = %v, want %v", vols, tc.wantVolumes)
			}
			mounts := map[string][]string{}
			for _, c := range pod.Spec.Containers {
				for _, m := range c.VolumeMounts {
					mounts[c.Name] = append(mounts[c.Name], m.Name)
				}
			}
			if !reflect.DeepEqual(mounts, tc.wantMounts) {
				t.Errorf("mounts = %v, want %v", mounts, tc.wantMounts)
			}
		})
	}
}

func TestPauseBetweenLookupsStopsWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pauseBetweenLookups(time.Hour)(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("pause = %v, want context.Canceled", err)
	}
}
