package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// ClaimGetter reads the PersistentVolumeClaims pods use and the
// PersistentVolumes bound to them. A missing object is an error for which
// apierrors.IsNotFound is true.
type ClaimGetter interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// MountError is a PersistentVolumeClaim volume that could not be set up:
// the claim is missing, unbound, or its volume is missing or of a type
// this kubelet cannot mount. The pod waits (upstream's FailedMount).
type MountError struct {
	Volume string // the pod's volume name
	Claim  string // namespace/name
	Err    error
}

func (e *MountError) Error() string {
	return fmt.Sprintf("error processing PVC %s: %v", e.Claim, e.Err)
}

func (e *MountError) Unwrap() error { return e.Err }

// FailedMountMessage is the text of a FailedMount event for err (a join
// of errors from SetupClaims): the volumes that could not be mounted and
// why, as upstream words it.
func FailedMountMessage(err error) string {
	var names, reasons []string
	var walk func(error)
	walk = func(e error) {
		var me *MountError
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if errors.As(e, &me) {
			names = append(names, me.Volume)
		}
		reasons = append(reasons, e.Error())
	}
	walk(err)
	sort.Strings(names)
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=[%s]: %s", strings.Join(names, " "), strings.Join(reasons, "; "))
}

// claimMount is where a claim's volume is on the node.
type claimMount struct {
	path string
}

// SetupClaims resolves every persistentVolumeClaim volume of pod to its
// bound PersistentVolume and prepares the volume's path on the node
// (created for a hostPath of type DirectoryOrCreate or without a type, as
// for hostPath volumes; a local volume's path must exist). The kubelet
// calls it before it creates the pod's sandbox: the errors are
// *MountError values, joined. Hollow nodes do not call it.
func (m *Manager) SetupClaims(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil || !validName(string(pod.UID)) {
		return errors.New("volumes: pod with a valid UID required")
	}
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if err := m.setupClaim(ctx, pod, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) setupClaim(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	name := v.PersistentVolumeClaim.ClaimName
	fail := func(err error) error {
		return &MountError{Volume: v.Name, Claim: pod.Namespace + "/" + name, Err: err}
	}
	if m.cfg.Claims == nil {
		return fail(errors.New("this kubelet cannot read PersistentVolumeClaims"))
	}
	pvc, err := m.cfg.Claims.GetPersistentVolumeClaim(ctx, pod.Namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return fail(fmt.Errorf("persistentvolumeclaim %q not found", name))
	case err != nil:
		return fail(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "":
		return fail(fmt.Errorf("PVC %s/%s has non-bound phase (%q) or empty pvc.Spec.VolumeName (%q)", pod.Namespace, name, pvc.Status.Phase, pvc.Spec.VolumeName))
	}
	pv, err := m.cfg.Claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	switch {
	case apierrors.IsNotFound(err):
		return fail(fmt.Errorf("persistentvolume %q not found", pvc.Spec.VolumeName))
	case err != nil:
		return fail(fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err))
	case pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" && pv.Spec.ClaimRef.UID != pvc.UID:
		return fail(fmt.Errorf("persistentvolume %q is bound to another claim", pv.Name))
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		if err := checkHostPath(pv.Spec.HostPath); err != nil {
			return fail(err)
		}
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
		if !filepath.IsAbs(path) {
			return fail(fmt.Errorf("local volume path %q is not absolute", path))
		}
		if _, err := os.Stat(path); err != nil {
			return fail(fmt.Errorf("local volume %s: %w", pv.Name, err))
		}
	default:
		return fail(fmt.Errorf("volume type of persistentvolume %q is not supported (only hostPath and local)", pv.Name))
	}
	m.mu.Lock()
	if m.claims[pod.UID] == nil {
		m.claims[pod.UID] = map[string]claimMount{}
	}
	m.claims[pod.UID][v.Name] = claimMount{path: path}
	m.mu.Unlock()
	return nil
}

// claimPath returns where SetupClaims found the volume of a claim volume.
func (m *Manager) claimPath(uid types.UID, volume string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cm, ok := m.claims[uid][volume]
	return cm.path, ok
}

// forgetClaims drops what SetupClaims found for a pod.
func (m *Manager) forgetClaims(uid types.UID) {
	m.mu.Lock()
	delete(m.claims, uid)
	m.mu.Unlock()
}
