// Package ociimage builds container image tarballs from local files, for
// tests that need an image without a registry: a one-layer image written as a
// docker-archive (`docker save` format) or an OCI image layout tarball. The
// output is deterministic: the same Image always gives the same bytes and so
// the same digests.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// File is one entry of the image's filesystem.
type File struct {
	// Path inside the image, e.g. "bin/busybox" (a leading "/" is allowed).
	Path string
	// Mode holds the permission bits (0 means 0644 for files, 0755 for
	// directories). fs.ModeSticky is honoured.
	Mode fs.FileMode
	// Data is the content of a regular file.
	Data []byte
	// Symlink, when set, makes the entry a symbolic link to this target.
	Symlink string
	// Dir makes the entry a directory.
	Dir bool
}

// Config is the runtime part of the image configuration.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	Labels     map[string]string
}

// Image describes an image to write.
type Image struct {
	// RepoTags name the image, e.g. "busybox:latest". A docker-archive stores
	// them as written (the importer normalises them); an OCI layout stores
	// the normalised name (docker.io/library/busybox:latest).
	RepoTags []string
	Files    []File
	Config   Config
	// OS and Architecture default to linux and amd64.
	OS, Architecture string
}

// epoch is the timestamp of every file and of the image: a fixed date keeps
// the output deterministic.
var epoch = time.Unix(0, 0).UTC()

// Layer returns the uncompressed layer tar of img's files: parent directories
// are added, entries are sorted by path, owned by root and dated at the Unix
// epoch.
func Layer(img Image) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range img.Files {
		p, err := cleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if f.Symlink != "" && (f.Dir || len(f.Data) > 0) {
			return nil, fmt.Errorf("ociimage: %s: a symlink has no data and is not a directory", f.Path)
		}
		if f.Dir && len(f.Data) > 0 {
			return nil, fmt.Errorf("ociimage: %s: a directory has no data", f.Path)
		}
		if prev, ok := entries[p]; ok && !(prev.Dir && f.Dir) {
			return nil, fmt.Errorf("ociimage: %s given twice", f.Path)
		}
		f.Path = p
		entries[p] = f
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if e, ok := entries[d]; ok {
				if !e.Dir {
					return nil, fmt.Errorf("ociimage: %s is a file and the parent of %s", d, p)
				}
				continue
			}
			entries[d] = File{Path: d, Dir: true}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := entries[p]
		hdr := &tar.Header{
			Name:    p,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		perm := int64(f.Mode.Perm())
		if f.Mode&fs.ModeSticky != 0 {
			perm |= 01000
		}
		switch {
		case f.Dir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if perm == 0 {
				perm = 0o755
			}
		case f.Symlink != "":
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = f.Symlink
			perm = 0o777
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Data))
			if perm == 0 {
				perm = 0o644
			}
		}
		hdr.Mode = perm
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("ociimage: writing %s: %w", p, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("ociimage: writing %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("ociimage: closing layer: %w", err)
	}
	return buf.Bytes(), nil
}

func cleanPath(p string) (string, error) {
	c := path.Clean(strings.TrimLeft(p, "/"))
	if p == "" || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("ociimage: invalid file path %q", p)
	}
	return c, nil
}

// imageConfig is the image configuration JSON (OCI image-spec and Docker
// schema 2 share these fields).
type imageConfig struct {
	Created      string        `json:"created"`
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Config       runtimeConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	} `json:"history"`
}

type runtimeConfig struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	User       string            `json:"User,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// built is an image's layer and config with their digests.
type built struct {
	layer, config             []byte
	layerDigest, configDigest string // "sha256:<hex>"
}

func build(img Image) (built, error) {
	layer, err := Layer(img)
	if err != nil {
		return built{}, err
	}
	var c imageConfig
	c.Created = epoch.Format(time.RFC3339)
	c.OS, c.Architecture = img.OS, img.Architecture
	if c.OS == "" {
		c.OS = "linux"
	}
	if c.Architecture == "" {
		c.Architecture = "amd64"
	}
	c.Config = runtimeConfig(img.Config)
	c.RootFS.Type = "layers"
	c.RootFS.DiffIDs = []string{digestOf(layer)}
	c.History = append(c.History, struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	}{c.Created, "kubebus ociimage"})
	config, err := json.Marshal(c)
	if err != nil {
		return built{}, fmt.Errorf("ociimage: encoding config: %w", err)
	}
	return built{layer: layer, config: config, layerDigest: digestOf(layer), configDigest: digestOf(config)}, nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func hexOf(digest string) string { return strings.TrimPrefix(digest, "sha256:") }

// ConfigDigest returns the digest of img's configuration ("sha256:..."), the
// image ID a runtime reports after importing it.
func ConfigDigest(img Image) (string, error) {
	b, err := build(img)
	if err != nil {
		return "", err
	}
	return b.configDigest, nil
}

// WriteDockerArchive writes img as a docker-archive: manifest.json, the config
// as <hex>.json and the layer as <hex>/layer.tar.
func WriteDockerArchive(w io.Writer, img Image) error {
	b, err := build(img)
	if err != nil {
		return err
	}
	for _, t := range img.RepoTags {
		if t == "" || strings.ContainsAny(t, " \t\n") {
			return fmt.Errorf("ociimage: invalid repo tag %q", t)
		}
	}
	configName := hexOf(b.configDigest) + ".json"
	layerName := hexOf(b.layerDigest) + "/layer.tar"
	manifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: configName, RepoTags: img.RepoTags, Layers: []string{layerName}}})
	if err != nil {
		return fmt.Errorf("ociimage: encoding manifest.json: %w", err)
	}
	tw := newTarWriter(w)
	tw.dir(hexOf(b.layerDigest))
	tw.file(layerName, b.layer)
	tw.file(configName, b.config)
	tw.file("manifest.json", manifest)
	return tw.close()
}

// OCI media types and annotations used in the layout.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	annotationRefName = "org.opencontainers.image.ref.name"
	// annotationImageName carries the full image name for containerd's importer.
	annotationImageName = "io.containerd.image.name"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// WriteOCILayout writes img as an OCI image layout tarball (oci-layout,
// index.json, blobs/sha256/...). Each repo tag becomes an index entry with
// the normalised name in io.containerd.image.name and its tag in
// org.opencontainers.image.ref.name.
func WriteOCILayout(w io.Writer, img Image) error {
	b, err := build(img)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{
		SchemaVersion: 2,
		MediaType:     mediaTypeManifest,
		Config:        descriptor{MediaType: mediaTypeConfig, Digest: b.configDigest, Size: int64(len(b.config))},
		Layers:        []descriptor{{MediaType: mediaTypeLayer, Digest: b.layerDigest, Size: int64(len(b.layer))}},
	})
	if err != nil {
		return fmt.Errorf("ociimage: encoding manifest: %w", err)
	}
	mdesc := descriptor{MediaType: mediaTypeManifest, Digest: digestOf(manifest), Size: int64(len(manifest))}
	os, arch := img.OS, img.Architecture
	if os == "" {
		os = "linux"
	}
	if arch == "" {
		arch = "amd64"
	}
	mdesc.Platform = &platform{Architecture: arch, OS: os}
	var manifests []descriptor
	for _, t := range img.RepoTags {
		name, tag, err := NormalizeName(t)
		if err != nil {
			return err
		}
		d := mdesc
		d.Annotations = map[string]string{annotationImageName: name, annotationRefName: tag}
		manifests = append(manifests, d)
	}
	if len(manifests) == 0 {
		manifests = []descriptor{mdesc}
	}
	index, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{2, mediaTypeIndex, manifests})
	if err != nil {
		return fmt.Errorf("ociimage: encoding index: %w", err)
	}
	tw := newTarWriter(w)
	tw.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	tw.dir("blobs")
	tw.dir("blobs/sha256")
	blobs := map[string][]byte{b.layerDigest: b.layer, b.configDigest: b.config, mdesc.Digest: manifest}
	keys := make([]string, 0, len(blobs))
	for k := range blobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		tw.file("blobs/sha256/"+hexOf(k), blobs[k])
	}
	tw.file("index.json", index)
	return tw.close()
}

// NormalizeName turns a Docker-style reference into its full name and tag:
// "busybox" -> ("docker.io/library/busybox:latest", "latest"),
// "example.com/a/b:v1" -> ("example.com/a/b:v1", "v1"). Digest references
// are not accepted.
func NormalizeName(ref string) (name, tag string, err error) {
	repo, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i+1:], "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	first, rest, hasSlash := strings.Cut(repo, "/")
	domain := ""
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		domain, repo = first, rest
	}
	if !tagRE.MatchString(tag) || !pathRE.MatchString(repo) || (domain != "" && !domainRE.MatchString(domain)) {
		return "", "", fmt.Errorf("ociimage: invalid image reference %q", ref)
	}
	switch {
	case domain != "":
		repo = domain + "/" + repo
	case !strings.Contains(repo, "/"):
		repo = "docker.io/library/" + repo
	default:
		repo = "docker.io/" + repo
	}
	return repo + ":" + tag, tag, nil
}

var (
	tagRE    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	pathRE   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	domainRE = regexp.MustCompile(`^[A-Za-z0-9.-]+(?::[0-9]+)?$`)
)

// tarWriter writes a deterministic outer tarball and keeps the first error.
type tarWriter struct {
	tw  *tar.Writer
	err error
}

func newTarWriter(w io.Writer) *tarWriter { return &tarWriter{tw: tar.NewWriter(w)} }

func (t *tarWriter) dir(name string) {
	if t.err != nil {
		return
	}
	t.err = t.tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
}

func (t *tarWriter) file(name string, data []byte) {
	if t.err != nil {
		return
	}
	if t.err = t.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); t.err != nil {
		return
	}
	_, t.err = t.tw.Write(data)
}

func (t *tarWriter) close() error {
	if t.err == nil {
		t.err = t.tw.Close()
	}
	if t.err != nil {
		return fmt.Errorf("ociimage: writing archive: %w", t.err)
	}
	return nil
}

// errNoBusybox is wrapped by Busybox when the host has no static busybox.
var errNoBusybox = errors.New("ociimage: a static busybox is needed at /bin/busybox: install the Debian package busybox-static")
