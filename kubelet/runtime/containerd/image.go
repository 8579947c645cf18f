package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// imageIDRE matches an image ID: a config digest, with or without "sha256:".
var imageIDRE = regexp.MustCompile(`^(sha256:)?[0-9a-f]{64}$`)

// NormalizeImageRef returns the full name of an image reference:
// "busybox" and "busybox:latest" become "docker.io/library/busybox:latest".
func NormalizeImageRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("containerd: invalid image reference %q: %w", ref, err)
	}
	return named.String(), nil
}

// ociRefName turns the org.opencontainers.image.ref.name of an OCI layout
// into an image name: a full or short reference is normalised; a bare tag
// ("latest") names nothing.
func ociRefName(name string) string {
	if !strings.ContainsAny(name, "/:") {
		return ""
	}
	n, err := NormalizeImageRef(name)
	if err != nil {
		return ""
	}
	return n
}

// ImportImage imports a docker-archive (`docker save`) or OCI layout
// tarball for the node's platform, unpacks it for the snapshotter and
// returns the images it named, under their normalised names
// (busybox:latest -> docker.io/library/busybox:latest).
func (r *Runtime) ImportImage(ctx context.Context, rd io.Reader) ([]runtime.Image, error) {
	ctx = r.ns(ctx)
	imgs, err := r.client.Import(ctx, rd, client.WithImageRefTranslator(ociRefName))
	if err != nil {
		return nil, fmt.Errorf("containerd: importing an image archive: %w", err)
	}
	if len(imgs) == 0 {
		return nil, errors.New("containerd: importing an image archive: it names no image (no RepoTags or ref names)")
	}
	names := map[string]bool{}
	for _, img := range imgs {
		if err := r.ensureUnpacked(ctx, client.NewImage(r.client, img)); err != nil {
			return nil, fmt.Errorf("containerd: importing %s: %w", img.Name, err)
		}
		names[img.Name] = true
	}
	all, err := r.listImages(ctx)
	if err != nil {
		return nil, err
	}
	var out []runtime.Image
	for _, img := range all {
		for _, t := range img.RepoTags {
			if names[t] {
				out = append(out, img)
				break
			}
		}
	}
	r.cfg.Logger.Info("images imported", "names", sortedKeys(names))
	return out, nil
}

// PullImage pulls an image from its registry and unpacks it.
func (r *Runtime) PullImage(ctx context.Context, ref string) (runtime.Image, error) {
	ctx = r.ns(ctx)
	name, err := NormalizeImageRef(ref)
	if err != nil {
		return runtime.Image{}, err
	}
	if _, err := r.client.Pull(ctx, name, client.WithPullUnpack, client.WithPullSnapshotter(r.cfg.Snapshotter)); err != nil {
		return runtime.Image{}, fmt.Errorf("containerd: pulling %s: %w", name, err)
	}
	img, err := r.ImageStatus(ctx, name)
	if err != nil {
		return runtime.Image{}, err
	}
	if img == nil {
		return runtime.Image{}, fmt.Errorf("containerd: pulled %s but it is gone", name)
	}
	return *img, nil
}

// ImageStatus returns the image a reference (short names accepted) or an
// image ID names, or nil when the runtime does not hold it.
func (r *Runtime) ImageStatus(ctx context.Context, ref string) (*runtime.Image, error) {
	ctx = r.ns(ctx)
	all, err := r.listImages(ctx)
	if err != nil {
		return nil, err
	}
	if imageIDRE.MatchString(ref) {
		id := ref
		if !strings.HasPrefix(id, "sha256:") {
			id = "sha256:" + id
		}
		for i := range all {
			if all[i].ID == id {
				return &all[i], nil
			}
		}
		return nil, nil
	}
	name, err := NormalizeImageRef(ref)
	if err != nil {
		return nil, err
	}
	for i := range all {
		for _, t := range all[i].RepoTags {
			if t == name {
				return &all[i], nil
			}
		}
	}
	return nil, nil
}

// ListImages returns the images the runtime holds, one per image ID with
// all the names that point at it.
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.Image, error) {
	return r.listImages(r.ns(ctx))
}

// RemoveImage removes an image name, or every name of an image ID. The
// content goes when no name refers to it. Removing a missing image does
// nothing.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx = r.ns(ctx)
	img, err := r.ImageStatus(ctx, ref)
	if err != nil || img == nil {
		return err
	}
	names := img.RepoTags
	if !imageIDRE.MatchString(ref) {
		name, _ := NormalizeImageRef(ref)
		names = []string{name}
	}
	for i, n := range names {
		var opts []images.DeleteOpt
		if i == len(names)-1 {
			opts = append(opts, images.SynchronousDelete())
		}
		if err := r.client.ImageService().Delete(ctx, n, opts...); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("containerd: removing image %s: %w", n, err)
		}
	}
	return nil
}

// ImageFsInfo reports the filesystem that holds the snapshotter's data.
// Used is the filesystem's, not only the images'.
func (r *Runtime) ImageFsInfo(ctx context.Context) (runtime.FsInfo, error) {
	ctx = r.ns(ctx)
	resp, err := r.client.IntrospectionService().Plugins(ctx, fmt.Sprintf("type==io.containerd.snapshotter.v1,id==%s", r.cfg.Snapshotter))
	if err != nil {
		return runtime.FsInfo{}, fmt.Errorf("containerd: looking up snapshotter %s: %w", r.cfg.Snapshotter, err)
	}
	root := ""
	for _, p := range resp.Plugins {
		if p.InitErr != nil {
			return runtime.FsInfo{}, fmt.Errorf("containerd: snapshotter %s failed to start: %s", r.cfg.Snapshotter, p.InitErr.Message)
		}
		root = p.Exports["root"]
	}
	if root == "" {
		return runtime.FsInfo{}, fmt.Errorf("containerd: snapshotter %s does not report its root", r.cfg.Snapshotter)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return runtime.FsInfo{}, fmt.Errorf("containerd: statfs %s: %w", root, err)
	}
	bs := uint64(st.Bsize)
	return runtime.FsInfo{
		Path:           root,
		CapacityBytes:  st.Blocks * bs,
		Used:           (st.Blocks - st.Bfree) * bs,
		AvailableBytes: st.Bavail * bs,
		InodesFree:     st.Ffree,
		InodesCap:      st.Files,
	}, nil
}

// getImage finds an image by reference (short names accepted) or ID.
func (r *Runtime) getImage(ctx context.Context, ref string) (client.Image, error) {
	name := ref
	if imageIDRE.MatchString(ref) {
		img, err := r.ImageStatus(ctx, ref)
		if err != nil {
			return nil, err
		}
		if img == nil || len(img.RepoTags) == 0 {
			return nil, fmt.Errorf("image %s: %w: import or pull it first", ref, ErrNotFound)
		}
		name = img.RepoTags[0]
	} else {
		var err error
		if name, err = NormalizeImageRef(ref); err != nil {
			return nil, err
		}
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("image %s: %w: import or pull it first", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	return img, nil
}

func (r *Runtime) ensureUnpacked(ctx context.Context, img client.Image) error {
	ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter)
	if err != nil {
		return fmt.Errorf("checking whether %s is unpacked: %w", img.Name(), err)
	}
	if ok {
		return nil
	}
	if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
		return fmt.Errorf("unpacking %s: %w", img.Name(), err)
	}
	return nil
}

// listImages groups the image store's names by image ID.
func (r *Runtime) listImages(ctx context.Context) ([]runtime.Image, error) {
	imgs, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("containerd: listing images: %w", err)
	}
	byID := map[string]*runtime.Image{}
	var order []string
	for _, img := range imgs {
		id := r.imageID(ctx, img.Target)
		if id == "" {
			continue // content missing (e.g. a pull in progress)
		}
		if strings.Contains(img.Name, "@") {
			continue // digest references are not names
		}
		ri := byID[id]
		if ri == nil {
			size, _ := client.NewImage(r.client, img).Size(ctx)
			ri = &runtime.Image{ID: id, Size: size}
			byID[id] = ri
			order = append(order, id)
		}
		ri.RepoTags = append(ri.RepoTags, img.Name)
		if img.UpdatedAt.After(ri.LastUsedAt) {
			ri.LastUsedAt = img.UpdatedAt
		}
	}
	sort.Strings(order)
	out := make([]runtime.Image, 0, len(order))
	for _, id := range order {
		sort.Strings(byID[id].RepoTags)
		out = append(out, *byID[id])
	}
	return out, nil
}

// imageIDs maps image names to image IDs.
func (r *Runtime) imageIDs(ctx context.Context) map[string]string {
	imgs, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(imgs))
	for _, img := range imgs {
		out[img.Name] = r.imageID(ctx, img.Target)
	}
	return out
}

// imageID returns the digest of the config of the image whose manifest (or
// index) is target, or "" when its content is missing. Targets are
// immutable, so the answer is cached.
func (r *Runtime) imageID(ctx context.Context, target ocispec.Descriptor) string {
	if v, ok := r.imageIDCache.Load(target.Digest); ok {
		return v.(string)
	}
	cfg, err := images.Config(ctx, r.client.ContentStore(), target, platforms.Default())
	if err != nil {
		return ""
	}
	id := cfg.Digest.String()
	r.imageIDCache.Store(target.Digest, id)
	return id
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
