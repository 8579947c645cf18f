package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

type fakeClaims struct {
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	err     error
}

func (f *fakeClaims) GetPersistentVolumeClaim(_ context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	if f.err != nil {
		return nil, f.err
	}
	if c, ok := f.claims[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (f *fakeClaims) GetPersistentVolume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	if pv, ok := f.volumes[name]; ok {
		return pv, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

func boundClaim(name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "c-" + "uid"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
}

func claimVolume(name, claim string, readOnly bool) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}
}

func TestClaimVolumes(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	localDir := t.TempDir()
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	pvs := map[string]*corev1.PersistentVolume{
		"pv-host": {ObjectMeta: metav1.ObjectMeta{Name: "pv-host"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(storage, "pvc-1_ns_data"), Type: &dirOrCreate}}}},
		"pv-local": {ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			Local: &corev1.LocalVolumeSource{Path: localDir}}}},
		"pv-local-missing": {ObjectMeta: metav1.ObjectMeta{Name: "pv-local-missing"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			Local: &corev1.LocalVolumeSource{Path: filepath.Join(storage, "nope")}}}},
		"pv-nfs": {ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}}}},
		"pv-other": {ObjectMeta: metav1.ObjectMeta{Name: "pv-other"}, Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{UID: "someone-else"}, PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: localDir}}}},
	}
	unbound := boundClaim("pending", "")
	unbound.Status.Phase = corev1.ClaimPending
	claims := map[string]*corev1.PersistentVolumeClaim{
		"ns/data": boundClaim("data", "pv-host"), "ns/local": boundClaim("local", "pv-local"), "ns/pending": unbound,
		"ns/no-pv": boundClaim("no-pv", "pv-gone"), "ns/nfs": boundClaim("nfs", "pv-nfs"),
		"ns/local-missing": boundClaim("local-missing", "pv-local-missing"), "ns/stolen": boundClaim("stolen", "pv-other"),
	}
	tests := []struct {
		name     string
		claim    string
		readOnly bool
		apiErr   error
		wantPath string
		wantErr  string
	}{
		{name: "hostPath DirectoryOrCreate is created", claim: "data", wantPath: filepath.Join(storage, "pvc-1_ns_data")},
		{name: "local volume", claim: "local", wantPath: localDir},
		{name: "read-only claim", claim: "local", readOnly: true, wantPath: localDir},
		{name: "claim not found", claim: "missing", wantErr: `error processing PVC ns/missing: persistentvolumeclaim "missing" not found`},
		{name: "claim not bound", claim: "pending", wantErr: `PVC ns/pending has non-bound phase ("Pending") or empty pvc.Spec.VolumeName ("")`},
		{name: "volume not found", claim: "no-pv", wantErr: `persistentvolume "pv-gone" not found`},
		{name: "unsupported volume type", claim: "nfs", wantErr: `volume type of persistentvolume "pv-nfs" is not supported`},
		{name: "local path missing", claim: "local-missing", wantErr: "no such file or directory"},
		{name: "volume bound to another claim", claim: "stolen", wantErr: "bound to another claim"},
		{name: "API error", claim: "data", apiErr: errors.New("boom"), wantErr: "failed to fetch PVC from API server: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := New(Config{Root: t.TempDir(), Getter: &fakeGetter{}, Claims: &fakeClaims{claims: claims, volumes: pvs, err: tc.apiErr}})
			if err != nil {
				t.Fatal(err)
			}
			pod := testPod(claimVolume("vol", tc.claim, tc.readOnly))
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = []corev1.VolumeMount{{Name: "vol", MountPath: "/data"}}
			ctx := context.Background()
			err = m.SetupClaims(ctx, pod)
			if tc.wantErr != "" {
				var me *MountError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &me) || me.Volume != "vol" {
					t.Fatalf("SetupClaims: %v, want a MountError with %q", err, tc.wantErr)
				}
				if msg := FailedMountMessage(err); !strings.HasPrefix(msg, "Unable to attach or mount volumes: unmounted volumes=[vol]: ") {
					t.Errorf("FailedMount message %q", msg)
				}
				if _, err := m.Mounts(pod, c, nil); err == nil {
					t.Error("Mounts of an unresolved claim succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(tc.wantPath); err != nil || !info.IsDir() {
				t.Fatalf("volume path %s: %v", tc.wantPath, err)
			}
			mounts, err := m.Mounts(pod, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := runtime.Mount{HostPath: tc.wantPath, ContainerPath: "/data", ReadOnly: tc.readOnly}
			if len(mounts) != 1 || mounts[0] != want {
				t.Errorf("mounts = %+v, want %+v", mounts, want)
			}
			// Setup (at each container start) does not need the API again,
			// and Cleanup leaves the volume's data alone.
			if err := m.Setup(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if err := m.Cleanup(pod.UID); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(tc.wantPath); err != nil {
				t.Errorf("Cleanup removed the volume's data: %v", err)
			}
			if _, err := m.Mounts(pod, c, nil); err == nil {
				t.Error("Mounts after Cleanup succeeded")
			}
		})
	}
}

// TestClaimVolumeAfterRestart: a kubelet that did not call SetupClaims for
// a pod (it restarted after the sandbox was made) resolves the claim in
// Setup.
func TestClaimVolumeAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	claims := &fakeClaims{claims: map[string]*corev1.PersistentVolumeClaim{"ns/data": boundClaim("data", "pv")},
		volumes: map[string]*corev1.PersistentVolume{"pv": {ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}}}
	m, err := New(Config{Root: t.TempDir(), Getter: &fakeGetter{}, Claims: claims})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(claimVolume("vol", "data", false))
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "vol", MountPath: "/data", SubPath: "sub"}}
	if err := m.Setup(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	mounts, err := m.Mounts(pod, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || mounts[0].HostPath != filepath.Join(dir, "sub") {
		t.Errorf("mounts = %+v", mounts)
	}
}
