package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	digest "github.com/opencontainers/go-digest"
	specsgo "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

const (
	// PauseBinaryName is the pause program (cmd/kubebus-pause) that
	// Config.PauseBinary defaults to when it lies beside the executable.
	PauseBinaryName = "kubebus-pause"
	// PauseImageRepo names the pause image the runtime builds from the
	// pause program; its tag is the start of the program's SHA-256, so
	// that another program gets another image.
	PauseImageRepo = "kubebus.local/pause"
	// labelPause marks a sandbox's pause container; its value is the
	// sandbox's ID. Such containers are not listed by ListContainers.
	labelPause = "io.kubebus.sandbox.pause"
	// pauseUID runs the pause process unprivileged (as upstream's).
	pauseUID = 65535
)

// pauseImage is the pause image built from Config.PauseBinary, once.
type pauseImage struct {
	ref     string // e.g. kubebus.local/pause:0123456789abcdef
	archive []byte // an OCI layout tarball
}

// defaultPauseBinary returns PauseBinaryName beside the running executable
// when it is there, else "".
func defaultPauseBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	p := filepath.Join(filepath.Dir(exe), PauseBinaryName)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

// loadPauseImage reads the pause program and builds its image, once. It
// returns nil without a pause program.
func (r *Runtime) loadPauseImage() (*pauseImage, error) {
	r.pauseOnce.Do(func() {
		if r.cfg.PauseBinary == "" {
			r.cfg.Logger.Warn("no pause program (" + PauseBinaryName + " beside the executable, or Config.PauseBinary): pod containers share only their network namespace")
			return
		}
		bin, err := os.ReadFile(r.cfg.PauseBinary)
		if err != nil {
			r.pauseErr = fmt.Errorf("containerd: reading the pause program: %w", err)
			return
		}
		sum := sha256.Sum256(bin)
		ref := PauseImageRepo + ":" + hex.EncodeToString(sum[:8])
		archive, err := PauseImageArchive(bin, ref, goruntime.GOARCH)
		if err != nil {
			r.pauseErr = err
			return
		}
		r.pause = &pauseImage{ref: ref, archive: archive}
	})
	return r.pause, r.pauseErr
}

// ensurePauseImage imports the pause image unless containerd holds it (it
// may have been removed by image garbage collection) and returns it.
func (r *Runtime) ensurePauseImage(ctx context.Context) (client.Image, error) {
	p, err := r.loadPauseImage()
	if err != nil {
		return nil, err
	}
	img, err := r.getImage(ctx, p.ref)
	if isNotFound(err) {
		if _, err := r.ImportImage(ctx, bytes.NewReader(p.archive)); err != nil {
			return nil, fmt.Errorf("containerd: importing the pause image: %w", err)
		}
		r.cfg.Logger.Info("imported the pause image", "image", p.ref)
		img, err = r.getImage(ctx, p.ref)
	}
	if err != nil {
		return nil, fmt.Errorf("containerd: the pause image: %w", err)
	}
	if err := r.ensureUnpacked(ctx, img); err != nil {
		return nil, fmt.Errorf("containerd: the pause image: %w", err)
	}
	return img, nil
}

// pauseID is the containerd ID of a sandbox's pause container. It differs
// from the sandbox's ID, which keys the sandbox's lock.
func pauseID(sandboxID string) string { return "pause-" + sandboxID }

// startPause creates and starts the sandbox's pause container. The pause
// container's ID must already be in the record.
func (r *Runtime) startPause(ctx context.Context, s *sandboxRecord) error {
	ctx = r.ns(ctx)
	image, err := r.ensurePauseImage(ctx)
	if err != nil {
		return err
	}
	var runtimeOpts any
	if r.cfg.RuncRoot != "" {
		runtimeOpts = &options.Options{Root: r.cfg.RuncRoot}
	}
	specOpts := append([]oci.SpecOpts{oci.WithImageConfig(image)}, pauseSpecOpts(s)...)
	c, err := r.client.NewContainer(ctx, s.PauseContainer,
		client.WithImage(image),
		client.WithSnapshotter(r.cfg.Snapshotter),
		client.WithNewSnapshot(s.PauseContainer, image),
		client.WithRuntime(RuncShim, runtimeOpts),
		client.WithNewSpec(specOpts...),
		client.WithContainerLabels(map[string]string{
			labelPause:                s.ID,
			runtime.LabelPodUID:       s.PodUID,
			runtime.LabelPodName:      s.Name,
			runtime.LabelPodNamespace: s.Namespace,
			labelStartedAt:            formatTime(time.Now()),
		}),
	)
	if err != nil {
		_ = r.client.SnapshotService(r.cfg.Snapshotter).Remove(ctx, s.PauseContainer)
		return fmt.Errorf("containerd: creating the pause container: %w", err)
	}
	task, err := c.NewTask(ctx, cio.NullIO)
	if err == nil {
		if err = task.Start(ctx); err != nil {
			_, _ = task.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
		}
	}
	if err != nil {
		return fmt.Errorf("containerd: starting the pause container: %w", err)
	}
	return nil
}

// pausePID returns the PID (in the kubelet's PID namespace) of the
// sandbox's running pause process.
func (r *Runtime) pausePID(ctx context.Context, s *sandboxRecord) (uint32, error) {
	ctx = r.ns(ctx)
	c, err := r.client.LoadContainer(ctx, s.PauseContainer)
	if err != nil {
		return 0, fmt.Errorf("containerd: sandbox %s: its pause container: %w", s.ID, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("containerd: sandbox %s: its pause process: %w", s.ID, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("containerd: sandbox %s: its pause process: %w", s.ID, err)
	}
	if st.Status != client.Running {
		return 0, fmt.Errorf("containerd: sandbox %s: its pause process is %s", s.ID, st.Status)
	}
	return task.Pid(), nil
}

// runningPauses returns the IDs of the pause containers whose task runs.
func (r *Runtime) runningPauses(ctx context.Context) (map[string]bool, error) {
	ctx = r.ns(ctx)
	cs, err := r.client.ContainerService().List(ctx, fmt.Sprintf("labels.%q", labelPause))
	if err != nil {
		return nil, fmt.Errorf("containerd: listing pause containers: %w", err)
	}
	if len(cs) == 0 {
		return map[string]bool{}, nil
	}
	tasks, err := r.taskStates(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range cs {
		if t := tasks[c.ID]; t.exists && t.status == client.Running {
			out[c.ID] = true
		}
	}
	return out, nil
}

// removePause kills and removes the sandbox's pause container, if any.
func (r *Runtime) removePause(ctx context.Context, s *sandboxRecord) error {
	if s.PauseContainer == "" {
		return nil
	}
	if err := r.RemoveContainer(ctx, s.PauseContainer); err != nil {
		return fmt.Errorf("containerd: sandbox %s: removing its pause container: %w", s.ID, err)
	}
	return nil
}

// PauseImageArchive returns an OCI image layout tarball of a one-layer
// image named ref for linux/arch holding the pause program as /pause, its
// entrypoint, run as user 65535. The output is deterministic.
func PauseImageArchive(pause []byte, ref, arch string) ([]byte, error) {
	if len(pause) == 0 {
		return nil, errors.New("containerd: the pause program is empty")
	}
	epoch := time.Unix(0, 0).UTC()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(pause)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("containerd: building the pause layer: %w", err)
	}
	if _, err := tw.Write(pause); err != nil {
		return nil, fmt.Errorf("containerd: building the pause layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("containerd: building the pause layer: %w", err)
	}
	layerDigest := digest.FromBytes(layer.Bytes())
	config, err := json.Marshal(ocispec.Image{
		Created:  &epoch,
		Platform: ocispec.Platform{OS: "linux", Architecture: arch},
		Config: ocispec.ImageConfig{
			User:       fmt.Sprintf("%d:%d", pauseUID, pauseUID),
			Entrypoint: []string{"/pause"},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDigest}},
	})
	if err != nil {
		return nil, fmt.Errorf("containerd: building the pause image config: %w", err)
	}
	configDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}
	layerDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: layerDigest, Size: int64(layer.Len())}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specsgo.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return nil, fmt.Errorf("containerd: building the pause image manifest: %w", err)
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specsgo.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{{
			MediaType:   ocispec.MediaTypeImageManifest,
			Digest:      digest.FromBytes(manifest),
			Size:        int64(len(manifest)),
			Platform:    &ocispec.Platform{OS: "linux", Architecture: arch},
			Annotations: map[string]string{ocispec.AnnotationRefName: ref},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("containerd: building the pause image index: %w", err)
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})

	var out bytes.Buffer
	ow := tar.NewWriter(&out)
	files := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{ocispec.ImageIndexFile, index},
		{blobPath(configDesc.Digest), config},
		{blobPath(layerDigest), layer.Bytes()},
		{blobPath(digest.FromBytes(manifest)), manifest},
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := ow.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("containerd: building the pause image: %w", err)
		}
	}
	for _, f := range files {
		if err := ow.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("containerd: building the pause image: %w", err)
		}
		if _, err := ow.Write(f.data); err != nil {
			return nil, fmt.Errorf("containerd: building the pause image: %w", err)
		}
	}
	if err := ow.Close(); err != nil {
		return nil, fmt.Errorf("containerd: building the pause image: %w", err)
	}
	return out.Bytes(), nil
}

func blobPath(d digest.Digest) string { return "blobs/" + d.Algorithm().String() + "/" + d.Encoded() }

// isPause reports whether a containerd container is a sandbox's pause
// container.
func isPause(labels map[string]string) bool {
	_, ok := labels[labelPause]
	return ok
}

// shmDir is the sandbox's /dev/shm, a tmpfs its containers share (POSIX
// shared memory goes with the IPC namespace, as in Kubernetes).
func (r *Runtime) shmDir(id string) string { return filepath.Join(r.sandboxDir(id), "shm") }

// shmSize bounds the sandbox's /dev/shm, as Docker's and containerd's
// default does.
const shmSize = "65536k"

// mountShm mounts the sandbox's shared /dev/shm.
func mountShm(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("containerd: creating the sandbox's /dev/shm: %w", err)
	}
	if err := unix.Mount("shm", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+shmSize); err != nil {
		return fmt.Errorf("containerd: mounting the sandbox's /dev/shm: %w", err)
	}
	return nil
}

// unmountShm unmounts the sandbox's /dev/shm; unmounting what is not
// mounted does nothing.
func unmountShm(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("containerd: unmounting the sandbox's /dev/shm: %w", err)
}
