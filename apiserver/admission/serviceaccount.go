package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// ServiceAccountGetter reads one ServiceAccount as it is stored now. A
// missing account is an apierrors NotFound.
type ServiceAccountGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

// The ServiceAccount plugin's names, as upstream.
const (
	// DefaultServiceAccountName is the account of a pod that names none.
	DefaultServiceAccountName = "default"
	// DefaultAPITokenMountPath is where every container finds its token,
	// the cluster CA and its namespace.
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// ServiceAccountVolumeName prefixes the name of the projected volume.
	ServiceAccountVolumeName = "kube-api-access"
	// RootCAConfigMapName is the ConfigMap every namespace gets with the
	// cluster's CA (key ca.crt).
	RootCAConfigMapName = "kube-root-ca.crt"
	// boundTokenExpirationSeconds is the lifetime asked for the projected
	// token: upstream's one hour plus seven seconds, by which the kubelet
	// recognises tokens it may warn about rather than expire.
	boundTokenExpirationSeconds int64 = 3607
	// defaultAccountAttempts is how many times a missing default account
	// is looked up: the ServiceAccount controller creates it right after
	// its namespace.
	defaultAccountAttempts = 10
)

var serviceAccountResource = schema.GroupResource{Resource: "serviceaccount"}

// ServiceAccount is upstream's ServiceAccount plugin. On pod CREATE it
// sets spec.serviceAccountName to "default" when empty, requires the
// account to exist (403 otherwise), copies the account's imagePullSecrets
// to a pod that has none and, unless automountServiceAccountToken is false
// on the pod or else on the account, adds the projected volume
// kube-api-access-XXXXX (a bound token, the cluster CA, the namespace)
// mounted read-only at DefaultAPITokenMountPath in every init container
// and container that has nothing mounted there yet. Mirror pods are left
// as the kubelet wrote them, but may not reference a ServiceAccount,
// secrets or a token projection.
type ServiceAccount struct {
	Accounts ServiceAccountGetter
	// Pause waits between lookups of a missing default account; nil waits
	// 100 to 200 ms, as upstream.
	Pause func(ctx context.Context) error
}

var _ auth.Admitter = ServiceAccount{}

// Admit implements auth.Admitter.
func (s ServiceAccount) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Create || req.Subresource != "" ||
		req.Attributes.APIGroup != "" || req.Attributes.Resource != "pods" {
		return nil
	}
	pod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		if err := checkMirrorPod(pod); err != nil {
			return forbidRequest(req, err)
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		// The deprecated alias follows, as the stored v1 pod has both.
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	sa, err := s.account(ctx, req.Attributes.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbidRequest(req, fmt.Errorf("error looking up service account %s/%s: %w",
			req.Attributes.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if shouldAutomount(sa, pod) {
		mountServiceAccountToken(pod, func() string { return ServiceAccountVolumeName + "-" + utilrand.String(5) })
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	return nil
}

// checkMirrorPod refuses a mirror pod that references what only the API
// may hand out.
func checkMirrorPod(pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return errors.New("a mirror pod may not reference service accounts")
	}
	if referencesSecrets(pod) {
		return errors.New("a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return errors.New("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// account returns the named ServiceAccount; the default account is looked
// up several times before it is declared missing.
func (s ServiceAccount) account(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = defaultAccountAttempts
	}
	pause := s.Pause
	if pause == nil {
		pause = pauseBetweenLookups(time.Duration(100+rand.IntN(100)) * time.Millisecond)
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if err := pause(ctx); err != nil {
				return nil, err
			}
		}
		sa, err := s.Accounts.GetServiceAccount(ctx, namespace, name)
		if err == nil {
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(serviceAccountResource, name)
}

// pauseBetweenLookups returns a Pause that waits d or until ctx ends.
func pauseBetweenLookups(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
}

// shouldAutomount: the pod's choice wins over the account's; the default
// is to mount.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken mounts the token volume in every container
// without a mount at DefaultAPITokenMountPath, adding the volume when some
// container needs it. A volume the pod already has under the
// kube-api-access- prefix is reused, as upstream; otherwise newName names
// it (retried should it collide with a volume of the pod).
func mountServiceAccountToken(pod *corev1.Pod, newName func() string) {
	name := ""
	taken := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		taken[v.Name] = true
		if name == "" && strings.HasPrefix(v.Name, ServiceAccountVolumeName+"-") {
			name = v.Name
		}
	}
	hasVolume := name != ""
	for !hasVolume && (name == "" || taken[name]) {
		name = newName()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	needed := false
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			if !mountsAt(containers[i], DefaultAPITokenMountPath) {
				containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()},
		})
	}
}

func mountsAt(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// tokenVolumeSource is upstream's projected kube-api-access volume.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	expiration := boundTokenExpirationSeconds
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMapName},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}
