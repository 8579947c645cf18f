package volumes

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

type fakeGetter struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (f *fakeGetter) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeGetter) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

type fakeTokens struct{ token string }

func (f fakeTokens) ServiceAccountToken(_ context.Context, pod *corev1.Pod, aud string, exp int64) (string, error) {
	if aud == "bad" {
		return "", errors.New("denied")
	}
	return f.token + ":" + pod.Spec.ServiceAccountName + ":" + aud, nil
}

func ptr[T any](v T) *T { return &v }

func newManager(t *testing.T, g *fakeGetter) (*Manager, string) {
	t.Helper()
	root := t.TempDir()
	m, err := New(Config{Root: root, Getter: g, Tokens: fakeTokens{token: "tok"},
		NodeAllocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}})
	if err != nil {
		t.Fatal(err)
	}
	return m, root
}

func testPod(volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "robot",
			Volumes:            volumes,
			Containers: []corev1.Container{{Name: "app", Image: "busybox", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
		},
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func perm(t *testing.T, p string) os.FileMode {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func TestConfigMapVolumeAndAtomicUpdate(t *testing.T) {
	t.Parallel()
	g := &fakeGetter{configMaps: map[string]*corev1.ConfigMap{
		"ns/cfg": {Data: map[string]string{"a.conf": "A1", "b.conf": "B1"}, BinaryData: map[string][]byte{"bin": {0, 1, 2}}},
	}}
	m, root := newManager(t, g)
	pod := testPod(corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	ctx := context.Background()
	if err := m.Setup(ctx, pod); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "pods", "uid-1", "volumes", "kubernetes.io~configmap", "cfg")
	if got := readFile(t, filepath.Join(dir, "a.conf")); got != "A1" {
		t.Fatalf("a.conf = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "bin")); got != "\x00\x01\x02" {
		t.Fatalf("bin = %q", got)
	}
	if p := perm(t, filepath.Join(dir, "a.conf")); p != 0o644 {
		t.Fatalf("mode = %v, want 0644", p)
	}
	if target, err := os.Readlink(filepath.Join(dir, "a.conf")); err != nil || target != "..data/a.conf" {
		t.Fatalf("a.conf is not a link through ..data: %q %v", target, err)
	}
	firstTS, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}

	// Unchanged content: nothing rewritten.
	if err := m.Setup(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if ts, _ := os.Readlink(filepath.Join(dir, "..data")); ts != firstTS {
		t.Fatalf("unchanged content rewrote ..data: %s -> %s", firstTS, ts)
	}

	// Changed content: a new data dir, a key removed, the old dir gone.
	g.configMaps["ns/cfg"] = &corev1.ConfigMap{Data: map[string]string{"a.conf": "A2", "c.conf": "C2"}}
	if err := m.Setup(ctx, pod); err != nil {
		t.Fatal(err)
	}
	ts, _ := os.Readlink(filepath.Join(dir, "..data"))
	if ts == firstTS {
		t.Fatal("changed content did not swap ..data")
	}
	if got := readFile(t, filepath.Join(dir, "a.conf")); got != "A2" {
		t.Fatalf("a.conf after update = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "c.conf")); got != "C2" {
		t.Fatalf("c.conf after update = %q", got)
	}
	for _, gone := range []string{"b.conf", "bin", firstTS, "..data_tmp"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after update (%v)", gone, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 { // ..data, the ts dir, a.conf, c.conf
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("volume dir holds %v", names)
	}
}

func TestProjectionItemsModesOptional(t *testing.T) {
	t.Parallel()
	g := &fakeGetter{
		configMaps: map[string]*corev1.ConfigMap{"ns/cfg": {Data: map[string]string{"k1": "v1", "k2": "v2"}}},
		secrets:    map[string]*corev1.Secret{"ns/creds": {Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("pw")}}},
	}
	tests := []struct {
		name    string
		vol     corev1.VolumeSource
		kind    string
		files   map[string]string      // path -> content
		modes   map[string]os.FileMode // path -> mode
		wantErr string
	}{
		{
			name: "configMap items with paths and modes",
			vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
				DefaultMode: ptr[int32](0o600), Items: []corev1.KeyToPath{{Key: "k1", Path: "dir/one"}, {Key: "k2", Path: "two", Mode: ptr[int32](0o400)}}}},
			kind:  KindConfigMap,
			files: map[string]string{"dir/one": "v1", "two": "v2"},
			modes: map[string]os.FileMode{"dir/one": 0o600, "two": 0o400},
		},
		{
			name:    "configMap item with a missing key",
			vol:     corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "nope", Path: "x"}}}},
			wantErr: "configmap references non-existent config key: nope",
		},
		{
			name:    "missing configMap",
			vol:     corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}},
			wantErr: `configmap "gone" not found`,
		},
		{
			name:  "missing optional configMap: empty volume",
			vol:   corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr(true)}},
			kind:  KindConfigMap,
			files: map[string]string{},
		},
		{
			name:    "configMap item path escaping",
			vol:     corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "k1", Path: "../x"}}}},
			wantErr: `path "../x" starts with '..'`,
		},
		{
			name:  "secret",
			vol:   corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}},
			kind:  KindSecret,
			files: map[string]string{"user": "admin", "pass": "pw"},
			modes: map[string]os.FileMode{"user": 0o644},
		},
		{
			name:    "missing secret",
			vol:     corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope"}},
			wantErr: `secret "nope" not found`,
		},
		{
			name: "downwardAPI",
			vol: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
				{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			}}},
			kind:  KindDownwardAPI,
			files: map[string]string{"name": "web", "labels": `app="web"`, "cpu": "500", "mem": "2048"},
		},
		{
			name: "projected: configMap, secret, downwardAPI and token",
			vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o440), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "k1", Path: "ca.crt"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Items: []corev1.KeyToPath{{Key: "user", Path: "user"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}},
			kind:  KindProjected,
			files: map[string]string{"token": "tok:robot:api", "ca.crt": "v1", "user": "admin", "namespace": "ns"},
			modes: map[string]os.FileMode{"token": 0o440},
		},
		{
			name: "projected token refused",
			vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "bad"}}}}},
			wantErr: `getting a token for service account "robot": denied`,
		},
		{
			name:    "unsupported volume type",
			vol:     corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}},
			wantErr: "unsupported volume type",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, root := newManager(t, g)
			pod := testPod(corev1.Volume{Name: "v", VolumeSource: tc.vol})
			err := m.Setup(context.Background(), pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `volume "v"`) {
					t.Fatalf("err = %v, want one naming the volume and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "pods", "uid-1", "volumes", tc.kind, "v")
			for p, want := range tc.files {
				if got := readFile(t, filepath.Join(dir, p)); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			for p, want := range tc.modes {
				if got := perm(t, filepath.Join(dir, p)); got != want {
					t.Errorf("%s mode = %v, want %v", p, got, want)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			visible := 0
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), "..") {
					visible++
				}
			}
			tops := map[string]bool{}
			for p := range tc.files {
				tops[strings.SplitN(p, "/", 2)[0]] = true
			}
			if visible != len(tops) {
				t.Errorf("volume shows %d entries, want %d", visible, len(tops))
			}
		})
	}
}

func TestHostPath(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	existingDir := filepath.Join(tmp, "dir")
	existingFile := filepath.Join(tmp, "file")
	if err := os.Mkdir(existingDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(existingFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(tmp, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	tests := []struct {
		name    string
		path    string
		typ     corev1.HostPathType
		wantErr string
		check   func(t *testing.T)
	}{
		{name: "unset type, missing path: created as a directory", path: filepath.Join(tmp, "missing", "deep"), check: func(t *testing.T) {
			if info, err := os.Stat(filepath.Join(tmp, "missing", "deep")); err != nil || !info.IsDir() {
				t.Errorf("directory not created: %v", err)
			}
		}},
		{name: "unset type, existing file", path: existingFile},
		{name: "directory", path: existingDir, typ: corev1.HostPathDirectory},
		{name: "directory, but a file", path: existingFile, typ: corev1.HostPathDirectory, wantErr: "is not a directory"},
		{name: "directory, missing", path: filepath.Join(tmp, "nodir"), typ: corev1.HostPathDirectory, wantErr: "is not a directory"},
		{name: "directory or create", path: filepath.Join(tmp, "new", "nested"), typ: corev1.HostPathDirectoryOrCreate, check: func(t *testing.T) {
			if info, err := os.Stat(filepath.Join(tmp, "new", "nested")); err != nil || !info.IsDir() {
				t.Errorf("directory not created: %v", err)
			}
		}},
		{name: "directory or create on a file", path: existingFile, typ: corev1.HostPathDirectoryOrCreate, wantErr: "is not a directory"},
		{name: "file", path: existingFile, typ: corev1.HostPathFile},
		{name: "file, but a directory", path: existingDir, typ: corev1.HostPathFile, wantErr: "is not a file"},
		{name: "file or create", path: filepath.Join(tmp, "newfile"), typ: corev1.HostPathFileOrCreate, check: func(t *testing.T) {
			if info, err := os.Stat(filepath.Join(tmp, "newfile")); err != nil || !info.Mode().IsRegular() || info.Size() != 0 {
				t.Errorf("file not created: %v", err)
			}
		}},
		{name: "file or create without parent", path: filepath.Join(tmp, "noparent", "f"), typ: corev1.HostPathFileOrCreate, wantErr: "creating hostPath file"},
		{name: "socket", path: sock, typ: corev1.HostPathSocket},
		{name: "socket, but a file", path: existingFile, typ: corev1.HostPathSocket, wantErr: "is not a socket file"},
		{name: "char device", path: "/dev/null", typ: corev1.HostPathCharDev},
		{name: "char device, but a file", path: existingFile, typ: corev1.HostPathCharDev, wantErr: "is not a character device"},
		{name: "block device, but a char device", path: "/dev/null", typ: corev1.HostPathBlockDev, wantErr: "is not a block device"},
		{name: "relative path", path: "rel/path", wantErr: "is not absolute"},
		{name: "unknown type", path: existingDir, typ: "Weird", wantErr: "unknown type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t, &fakeGetter{})
			src := &corev1.HostPathVolumeSource{Path: tc.path}
			if tc.typ != "" {
				src.Type = &tc.typ
			}
			err := m.Setup(context.Background(), testPod(corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: src}}))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

func TestMountsAndCleanup(t *testing.T) {
	t.Parallel()
	g := &fakeGetter{configMaps: map[string]*corev1.ConfigMap{"ns/cfg": {Data: map[string]string{"app.conf": "x"}}}}
	m, root := newManager(t, g)
	host := t.TempDir()
	outside := t.TempDir()
	pod := testPod(
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}}},
	)
	ctx := context.Background()
	if err := m.Setup(ctx, pod); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(root, "pods", "uid-1")
	scratch := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "scratch")
	if p := perm(t, scratch); p != 0o777 {
		t.Errorf("emptyDir mode %v, want 0777", p)
	}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/data", SubPathExpr: "$(POD_NAME)/data"},
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "host", MountPath: "/host", ReadOnly: true},
	}
	mounts, err := m.Mounts(pod, c, []runtime.KeyValue{{Key: "POD_NAME", Value: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(podDir, "volumes", "kubernetes.io~configmap", "cfg")
	ts, _ := os.Readlink(filepath.Join(cfgDir, "..data"))
	want := []runtime.Mount{
		{HostPath: scratch, ContainerPath: "/scratch"},
		{HostPath: filepath.Join(scratch, "web", "data"), ContainerPath: "/data"},
		{HostPath: filepath.Join(cfgDir, ts, "app.conf"), ContainerPath: "/etc/app.conf", ReadOnly: true},
		{HostPath: host, ContainerPath: "/host", ReadOnly: true},
	}
	// The temp dirs may sit behind a symlink; compare resolved paths.
	for i := range want {
		if r, err := filepath.EvalSymlinks(want[i].HostPath); err == nil {
			want[i].HostPath = r
		}
	}
	if len(mounts) != len(want) {
		t.Fatalf("mounts = %+v", mounts)
	}
	for i := range want {
		if mounts[i] != want[i] {
			t.Errorf("mount %d = %+v, want %+v", i, mounts[i], want[i])
		}
	}
	if info, err := os.Stat(filepath.Join(scratch, "web", "data")); err != nil || !info.IsDir() {
		t.Errorf("subPath directory not created: %v", err)
	}

	// A symlink inside the volume that leads out of it is refused.
	if err := os.Symlink(outside, filepath.Join(scratch, "escape")); err != nil {
		t.Fatal(err)
	}
	for name, vm := range map[string]corev1.VolumeMount{
		"symlink out":    {Name: "scratch", MountPath: "/x", SubPath: "escape/sub"},
		"dot-dot":        {Name: "scratch", MountPath: "/x", SubPath: "a/../../etc"},
		"absolute":       {Name: "scratch", MountPath: "/x", SubPath: "/etc"},
		"missing volume": {Name: "nope", MountPath: "/x"},
	} {
		c.VolumeMounts = []corev1.VolumeMount{vm}
		if _, err := m.Mounts(pod, c, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was created outside the volume: %v", err)
	}

	if err := m.Cleanup("uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod dir still there: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("cleanup followed a symlink out: %v", err)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("cleanup removed the hostPath: %v", err)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if err := m.Cleanup(typesUID(bad)); err == nil {
			t.Errorf("Cleanup(%q): no error", bad)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no root":       {Getter: &fakeGetter{}},
		"relative root": {Root: "var/lib/kubelet", Getter: &fakeGetter{}},
		"no getter":     {Root: "/var/lib/kubelet"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
