package containerd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/kubelet/runtime"
	"github.com/kubebus/kubebus/test/harness/ociimage"
)

func TestNormalizeImageRef(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"busybox":                          "docker.io/library/busybox:latest",
		"busybox:latest":                   "docker.io/library/busybox:latest",
		"docker.io/library/busybox:latest": "docker.io/library/busybox:latest",
		"example/app:v1":                   "docker.io/example/app:v1",
		"registry.local:5000/a/b":          "registry.local:5000/a/b:latest",
	} {
		if got, err := NormalizeImageRef(in); err != nil || got != want {
			t.Errorf("NormalizeImageRef(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Busybox", "a b", "busybox:"} {
		if _, err := NormalizeImageRef(bad); err == nil {
			t.Errorf("NormalizeImageRef(%q): no error", bad)
		}
	}
	for in, want := range map[string]string{"latest": "", "busybox:1": "docker.io/library/busybox:1", "x/y": "docker.io/x/y:latest", "Bad:1": ""} {
		if got := ociRefName(in); got != want {
			t.Errorf("ociRefName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIntegrationImages(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.80.0/24"})
	ctx := context.Background()
	rt := e.rt

	bb, err := ociimage.BusyboxImage()
	if err != nil {
		t.Fatal(err)
	}
	wantID, err := ociimage.ConfigDigest(bb)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := ociimage.WriteDockerArchive(&archive, bb); err != nil {
		t.Fatal(err)
	}
	imgs, err := rt.ImportImage(ctx, &archive)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || imgs[0].ID != wantID || len(imgs[0].RepoTags) != 1 || imgs[0].RepoTags[0] != "docker.io/library/busybox:latest" || imgs[0].Size <= 0 {
		t.Fatalf("imported %+v, want ID %s named docker.io/library/busybox:latest", imgs, wantID)
	}
	for _, ref := range []string{"busybox", "busybox:latest", "docker.io/library/busybox:latest", wantID, strings.TrimPrefix(wantID, "sha256:")} {
		img, err := rt.ImageStatus(ctx, ref)
		if err != nil || img == nil || img.ID != wantID {
			t.Errorf("ImageStatus(%q) = %+v, %v", ref, img, err)
		}
	}
	if img, err := rt.ImageStatus(ctx, "busybox:other"); err != nil || img != nil {
		t.Errorf("ImageStatus of a missing tag = %+v, %v", img, err)
	}
	if _, err := rt.ImageStatus(ctx, "Not A Ref"); err == nil {
		t.Error("ImageStatus of an invalid reference: no error")
	}

	// An OCI layout under a second name, with a different config.
	other := bb
	other.RepoTags = []string{"example.com/test/tool:v1", "example.com/test/tool:v1.0"}
	other.Config.Env = append([]string{"TOOL=1"}, bb.Config.Env...)
	var layout bytes.Buffer
	if err := ociimage.WriteOCILayout(&layout, other); err != nil {
		t.Fatal(err)
	}
	imgs, err = rt.ImportImage(ctx, &layout)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || strings.Join(imgs[0].RepoTags, ",") != "example.com/test/tool:v1,example.com/test/tool:v1.0" {
		t.Fatalf("OCI import: %+v", imgs)
	}
	all, err := rt.ListImages(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListImages = %+v, %v", all, err)
	}

	// Containers run from either image.
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "u", Name: "img", Namespace: "default", HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	id := runContainer(t, rt, sb, runtime.ContainerConfig{Name: "tool", Image: "example.com/test/tool:v1.0", Command: []string{"sh", "-c", "exit $TOOL"}})
	if c := containerExit(t, rt, id); c.ExitCode != 1 || c.ImageID != imgs[0].ID {
		t.Errorf("container of the OCI image: %+v", c)
	}
	if _, err := rt.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{Name: "x", Image: "nosuchimage"}); err == nil || !strings.Contains(err.Error(), "import or pull it first") {
		t.Errorf("container of a missing image: %v", err)
	}

	// Removing a name keeps the others; removing by ID removes all names.
	if err := rt.RemoveImage(ctx, "example.com/test/tool:v1"); err != nil {
		t.Fatal(err)
	}
	if img, err := rt.ImageStatus(ctx, "example.com/test/tool:v1.0"); err != nil || img == nil || len(img.RepoTags) != 1 {
		t.Errorf("the other name after removing one: %+v %v", img, err)
	}
	if err := rt.RemoveImage(ctx, imgs[0].ID); err != nil {
		t.Fatal(err)
	}
	if img, err := rt.ImageStatus(ctx, "example.com/test/tool:v1.0"); err != nil || img != nil {
		t.Errorf("after removal by ID: %+v %v", img, err)
	}
	if err := rt.RemoveImage(ctx, "example.com/test/tool:v1.0"); err != nil {
		t.Errorf("removing a removed image: %v", err)
	}

	// Errors.
	if _, err := rt.ImportImage(ctx, strings.NewReader("not a tarball")); err == nil {
		t.Error("importing garbage: no error")
	}
	var unnamed bytes.Buffer
	noTags := bb
	noTags.RepoTags = nil
	if err := ociimage.WriteDockerArchive(&unnamed, noTags); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ImportImage(ctx, &unnamed); err == nil || !strings.Contains(err.Error(), "names no image") {
		t.Errorf("importing an unnamed image: %v", err)
	}
	_, err = rt.PullImage(ctx, "registry.invalid/nothing:1")
	if err == nil || !strings.Contains(err.Error(), "pulling registry.invalid/nothing:1") {
		t.Errorf("pull without a registry: %v", err)
	}

	fs, err := rt.ImageFsInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fs.Path, e.dir) || fs.CapacityBytes == 0 || fs.AvailableBytes > fs.CapacityBytes || fs.InodesCap == 0 {
		t.Errorf("ImageFsInfo = %+v", fs)
	}
}
