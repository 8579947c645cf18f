package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// specNamespaces generates a spec from opts and returns its namespaces:
// type -> path ("" for a new namespace); a type absent from the map is the
// host's.
func specNamespaces(t *testing.T, opts []oci.SpecOpts) (map[specs.LinuxNamespaceType]string, *oci.Spec) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "test")
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[specs.LinuxNamespaceType]string{}
	for _, ns := range s.Linux.Namespaces {
		out[ns.Type] = ns.Path
	}
	return out, s
}

func TestContainerNamespaces(t *testing.T) {
	t.Parallel()
	const pid = 4242
	type want map[specs.LinuxNamespaceType]string // absent: the host's
	for _, tc := range []struct {
		name     string
		sb       sandboxRecord
		pausePID uint32
		want     want
		hostname string
		shm      string // source of the /dev/shm bind mount; "" for the container's own tmpfs
	}{{
		name:     "shared process namespace",
		sb:       sandboxRecord{ID: "sb", Hostname: "h", NetNSPath: "/netns/sb", ShareProcessNamespace: true, SharedShm: true},
		pausePID: pid,
		shm:      "/x/shm",
		want: want{
			specs.NetworkNamespace: "/netns/sb", specs.UTSNamespace: "/proc/4242/ns/uts",
			specs.IPCNamespace: "/proc/4242/ns/ipc", specs.PIDNamespace: "/proc/4242/ns/pid", specs.MountNamespace: "",
		},
	}, {
		name:     "own process namespace",
		sb:       sandboxRecord{ID: "sb", Hostname: "h", NetNSPath: "/netns/sb", SharedShm: true},
		pausePID: pid,
		shm:      "/x/shm",
		want: want{
			specs.NetworkNamespace: "/netns/sb", specs.UTSNamespace: "/proc/4242/ns/uts",
			specs.IPCNamespace: "/proc/4242/ns/ipc", specs.PIDNamespace: "", specs.MountNamespace: "",
		},
	}, {
		name:     "host network, IPC and PID",
		sb:       sandboxRecord{ID: "sb", HostNetwork: true, HostIPC: true, HostPID: true, ShareProcessNamespace: true},
		pausePID: pid,
		want:     want{specs.MountNamespace: ""},
		shm:      "/dev/shm",
	}, {
		name:     "host IPC only",
		sb:       sandboxRecord{ID: "sb", Hostname: "h", NetNSPath: "/netns/sb", HostIPC: true, ShareProcessNamespace: true},
		pausePID: pid,
		shm:      "/dev/shm",
		want: want{
			specs.NetworkNamespace: "/netns/sb", specs.UTSNamespace: "/proc/4242/ns/uts",
			specs.PIDNamespace: "/proc/4242/ns/pid", specs.MountNamespace: "",
		},
	}, {
		name:     "no pause container",
		sb:       sandboxRecord{ID: "sb", Hostname: "h", NetNSPath: "/netns/sb", ShareProcessNamespace: true},
		want:     want{specs.NetworkNamespace: "/netns/sb", specs.UTSNamespace: "", specs.IPCNamespace: "", specs.PIDNamespace: "", specs.MountNamespace: ""},
		hostname: "h",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, s := specNamespaces(t, containerSpecOpts(&runtime.ContainerConfig{Name: "a", Image: "i"}, &tc.sb, "/x", tc.pausePID))
			if len(got) != len(tc.want) {
				t.Errorf("namespaces %v, want %v", got, tc.want)
			}
			for typ, path := range tc.want {
				if p, ok := got[typ]; !ok || p != path {
					t.Errorf("%s namespace: path %q (present %v), want %q", typ, p, ok, path)
				}
			}
			if s.Hostname != tc.hostname {
				t.Errorf("hostname %q, want %q", s.Hostname, tc.hostname)
			}
			var shm []specs.Mount
			for _, m := range s.Mounts {
				if m.Destination == "/dev/shm" {
					shm = append(shm, m)
				}
			}
			switch {
			case len(shm) != 1:
				t.Errorf("/dev/shm mounts %+v, want one", shm)
			case tc.shm == "" && shm[0].Type != "tmpfs":
				t.Errorf("/dev/shm %+v, want the container's own tmpfs", shm[0])
			case tc.shm != "" && (shm[0].Type != "bind" || shm[0].Source != tc.shm):
				t.Errorf("/dev/shm %+v, want a bind mount of %s", shm[0], tc.shm)
			}
		})
	}
}

func TestPauseSpecOpts(t *testing.T) {
	t.Parallel()
	// Pod network: the pod's network namespace, its own UTS (with the
	// hostname), IPC and PID namespaces.
	got, s := specNamespaces(t, pauseSpecOpts(&sandboxRecord{ID: "sb", Hostname: "web-0", NetNSPath: "/netns/sb"}))
	want := map[specs.LinuxNamespaceType]string{
		specs.NetworkNamespace: "/netns/sb", specs.UTSNamespace: "", specs.IPCNamespace: "", specs.PIDNamespace: "", specs.MountNamespace: "",
	}
	for typ, path := range want {
		if p, ok := got[typ]; !ok || p != path {
			t.Errorf("%s namespace: path %q (present %v), want %q", typ, p, ok, path)
		}
	}
	if s.Hostname != "web-0" || !s.Root.Readonly || len(s.Process.Capabilities.Bounding) != 0 || !s.Process.NoNewPrivileges {
		t.Errorf("hostname %q readonly %v capabilities %v noNewPrivileges %v", s.Hostname, s.Root.Readonly, s.Process.Capabilities.Bounding, s.Process.NoNewPrivileges)
	}

	// Host network, IPC and PID: none of those is the pause's own.
	got, _ = specNamespaces(t, pauseSpecOpts(&sandboxRecord{ID: "sb", HostNetwork: true, HostIPC: true, HostPID: true}))
	for _, typ := range []specs.LinuxNamespaceType{specs.NetworkNamespace, specs.UTSNamespace, specs.IPCNamespace, specs.PIDNamespace} {
		if _, ok := got[typ]; ok {
			t.Errorf("host pod's pause has its own %s namespace", typ)
		}
	}
	// Host network in the node's namespace (Config.HostNetNS).
	got, _ = specNamespaces(t, pauseSpecOpts(&sandboxRecord{ID: "sb", HostNetwork: true, NetNSPath: "/run/netns/node"}))
	if got[specs.NetworkNamespace] != "/run/netns/node" {
		t.Errorf("network namespace %q, want the node's", got[specs.NetworkNamespace])
	}
	if _, ok := got[specs.IPCNamespace]; !ok {
		t.Error("a host-network pod's pause has the host's IPC namespace")
	}
}

func TestPauseImageArchive(t *testing.T) {
	t.Parallel()
	bin := []byte("\x7fELF pretend pause program")
	a, err := PauseImageArchive(bin, "kubebus.local/pause:test", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PauseImageArchive(bin, "kubebus.local/pause:test", "arm64")
	if !bytes.Equal(a, b) {
		t.Error("the archive is not deterministic")
	}
	if _, err := PauseImageArchive(nil, "kubebus.local/pause:test", "amd64"); err == nil {
		t.Error("an empty pause program was accepted")
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
	blob := func(d digest.Digest) []byte {
		t.Helper()
		data, ok := files["blobs/sha256/"+d.Encoded()]
		if !ok {
			t.Fatalf("blob %s missing", d)
		}
		if digest.FromBytes(data) != d {
			t.Fatalf("blob %s has digest %s", d, digest.FromBytes(data))
		}
		return data
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations[ocispec.AnnotationRefName] != "kubebus.local/pause:test" ||
		index.Manifests[0].Platform.Architecture != "arm64" {
		t.Fatalf("index %+v", index)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &m); err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(blob(m.Config.Digest), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" || cfg.OS != "linux" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/pause" || cfg.Config.User != "65535:65535" {
		t.Errorf("config %+v", cfg)
	}
	if len(m.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != m.Layers[0].Digest {
		t.Fatalf("layers %+v, diff IDs %v", m.Layers, cfg.RootFS.DiffIDs)
	}
	lr := tar.NewReader(bytes.NewReader(blob(m.Layers[0].Digest)))
	h, err := lr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(lr)
	if h.Name != "pause" || h.Mode != 0o755 || !bytes.Equal(data, bin) {
		t.Errorf("layer entry %s mode %o, %d bytes", h.Name, h.Mode, len(data))
	}
	if files["oci-layout"] == nil {
		t.Error("no oci-layout file")
	}
}
