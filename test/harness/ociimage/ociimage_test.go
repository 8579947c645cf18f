package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/test/prereq"
)

func testImage() Image {
	return Image{
		RepoTags: []string{"example/app:v1"},
		Files: []File{
			{Path: "/usr/bin/app", Data: []byte("#!/bin/sh\necho hi\n"), Mode: 0o755},
			{Path: "bin/sh", Symlink: "/usr/bin/app"},
			{Path: "tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
		},
		Config: Config{Entrypoint: []string{"/usr/bin/app"}, Cmd: []string{"x"}, Env: []string{"A=b"}, WorkingDir: "/tmp"},
	}
}

// readTar returns the entries of a tarball by name.
func readTar(t *testing.T, b []byte) (map[string]*tar.Header, map[string][]byte, []string) {
	t.Helper()
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hdrs[h.Name], data[h.Name] = h, d
		order = append(order, h.Name)
	}
	return hdrs, data, order
}

func TestLayer(t *testing.T) {
	t.Parallel()
	layer, err := Layer(testImage())
	if err != nil {
		t.Fatal(err)
	}
	hdrs, data, order := readTar(t, layer)
	want := []string{"bin/", "bin/sh", "tmp/", "usr/", "usr/bin/", "usr/bin/app"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("entries %v, want %v", order, want)
	}
	if h := hdrs["usr/bin/app"]; h.Mode != 0o755 || h.Uid != 0 || !h.ModTime.Equal(epoch) || string(data["usr/bin/app"]) != "#!/bin/sh\necho hi\n" {
		t.Errorf("usr/bin/app: mode %o uid %d mtime %v data %q", h.Mode, h.Uid, h.ModTime, data["usr/bin/app"])
	}
	if h := hdrs["bin/sh"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "/usr/bin/app" {
		t.Errorf("bin/sh: type %c link %q", h.Typeflag, h.Linkname)
	}
	if h := hdrs["tmp/"]; h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("tmp/: type %c mode %o", h.Typeflag, h.Mode)
	}
	if h := hdrs["usr/"]; h.Mode != 0o755 {
		t.Errorf("usr/: mode %o", h.Mode)
	}
}

func TestLayerErrors(t *testing.T) {
	t.Parallel()
	for name, files := range map[string][]File{
		"empty path":       {{Path: ""}},
		"root":             {{Path: "/"}},
		"escape":           {{Path: "../etc/passwd"}},
		"twice":            {{Path: "a"}, {Path: "/a"}},
		"file as parent":   {{Path: "a"}, {Path: "a/b"}},
		"symlink and data": {{Path: "a", Symlink: "b", Data: []byte("x")}},
		"dir with data":    {{Path: "a", Dir: true, Data: []byte("x")}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Layer(Image{Files: files}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestDockerArchive(t *testing.T) {
	t.Parallel()
	img := testImage()
	var a, b bytes.Buffer
	if err := WriteDockerArchive(&a, img); err != nil {
		t.Fatal(err)
	}
	if err := WriteDockerArchive(&b, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same image differ")
	}
	_, data, _ := readTar(t, a.Bytes())
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(data["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 || manifest[0].RepoTags[0] != "example/app:v1" {
		t.Fatalf("manifest %+v", manifest)
	}
	cfgBytes, layer := data[manifest[0].Config], data[manifest[0].Layers[0]]
	cfgDigest, err := ConfigDigest(img)
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(cfgBytes) != cfgDigest || manifest[0].Config != hexOf(cfgDigest)+".json" {
		t.Errorf("config %s has digest %s, ConfigDigest says %s", manifest[0].Config, digestOf(cfgBytes), cfgDigest)
	}
	var cfg imageConfig
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.RootFS.DiffIDs[0] != digestOf(layer) || cfg.OS != "linux" || cfg.Config.WorkingDir != "/tmp" ||
		cfg.Config.Entrypoint[0] != "/usr/bin/app" || cfg.Config.Env[0] != "A=b" {
		t.Errorf("config %+v, layer digest %s", cfg, digestOf(layer))
	}
}

func TestOCILayout(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WriteOCILayout(&buf, testImage()); err != nil {
		t.Fatal(err)
	}
	_, data, _ := readTar(t, buf.Bytes())
	if string(data["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", data["oci-layout"])
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(data["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index %s", data["index.json"])
	}
	m := index.Manifests[0]
	if m.Annotations[annotationImageName] != "docker.io/example/app:v1" || m.Annotations[annotationRefName] != "v1" {
		t.Errorf("annotations %v", m.Annotations)
	}
	mb := data["blobs/sha256/"+hexOf(m.Digest)]
	if digestOf(mb) != m.Digest || int64(len(mb)) != m.Size {
		t.Fatalf("manifest blob %s missing or wrong", m.Digest)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(mb, &manifest); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(manifest.Layers, manifest.Config) {
		b, ok := data["blobs/sha256/"+hexOf(d.Digest)]
		if !ok || digestOf(b) != d.Digest || int64(len(b)) != d.Size {
			t.Errorf("blob %s missing or wrong", d.Digest)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, name, tag string }{
		{"busybox", "docker.io/library/busybox:latest", "latest"},
		{"busybox:1.36", "docker.io/library/busybox:1.36", "1.36"},
		{"example/app:v1", "docker.io/example/app:v1", "v1"},
		{"registry.local:5000/a/b", "registry.local:5000/a/b:latest", "latest"},
		{"localhost/x:y", "localhost/x:y", "y"},
		{"docker.io/library/busybox:latest", "docker.io/library/busybox:latest", "latest"},
	} {
		name, tag, err := NormalizeName(tc.in)
		if err != nil || name != tc.name || tag != tc.tag {
			t.Errorf("NormalizeName(%q) = %q, %q, %v; want %q, %q", tc.in, name, tag, err, tc.name, tc.tag)
		}
	}
	for _, bad := range []string{"", "Busybox", "a b", "busybox@sha256:00", "busybox:", "/x", "x/", "a:b:c"} {
		if _, _, err := NormalizeName(bad); err == nil {
			t.Errorf("NormalizeName(%q): no error", bad)
		}
	}
}

func TestBusybox(t *testing.T) {
	t.Parallel()
	if err := checkStatic([]byte("not elf")); err == nil || !strings.Contains(err.Error(), "busybox-static") {
		t.Errorf("checkStatic(garbage) = %v", err)
	}
	archive, err := BusyboxArchive()
	if errors.Is(err, errNoBusybox) {
		if _, statErr := os.Stat(BusyboxPath); statErr == nil {
			t.Fatalf("BusyboxArchive says missing but %s exists", BusyboxPath)
		}
		prereq.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, data, _ := readTar(t, archive)
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(data["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	hdrs, _, _ := readTar(t, data[manifest[0].Layers[0]])
	if h := hdrs["bin/busybox"]; h == nil || h.Mode != 0o755 {
		t.Fatalf("bin/busybox missing or not executable: %+v", h)
	}
	if h := hdrs["bin/httpd"]; h == nil || h.Linkname != "busybox" {
		t.Fatalf("bin/httpd not a link to busybox: %+v", h)
	}
}
