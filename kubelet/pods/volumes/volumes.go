// Package volumes prepares the volumes of the pods a kubelet runs, on the
// node's disk under a root directory (/var/lib/kubelet on a real node):
// <root>/pods/<uid>/volumes/<kind>/<name> for emptyDir, configMap,
// secret, downwardAPI and projected volumes, and the node's own paths for
// hostPath volumes, and the path of the PersistentVolume (hostPath or
// local) bound to a persistentVolumeClaim volume's claim. It returns the
// bind mounts of each container.
//
// Limits, compared with upstream: emptyDir with medium Memory is a plain
// directory (no tmpfs), secrets are written to disk (no tmpfs), sizeLimit
// and fsGroup ownership are not applied, and subPath resolution checks
// for symlinks escaping the volume but cannot rule out a container
// swapping a symlink between the check and the bind mount.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/kubelet/pods"
)

// Directory names of the volume kinds, as upstream's plugin names.
const (
	KindEmptyDir    = "kubernetes.io~empty-dir"
	KindConfigMap   = "kubernetes.io~configmap"
	KindSecret      = "kubernetes.io~secret"
	KindDownwardAPI = "kubernetes.io~downward-api"
	KindProjected   = "kubernetes.io~projected"
)

// defaultMode is the mode of projected files when the volume sets none.
const defaultMode = 0o644

// ObjectGetter reads the ConfigMaps and Secrets volumes project. A missing
// object is an error for which apierrors.IsNotFound is true.
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// TokenSource issues service account tokens for projected
// serviceAccountToken sources (a TokenRequest on the pod's service
// account, bound to the pod).
type TokenSource interface {
	ServiceAccountToken(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, error)
}

// Config configures a Manager.
type Config struct {
	// Root is the kubelet's directory; pod volumes live under Root/pods.
	Root string
	// Getter reads ConfigMaps and Secrets.
	Getter ObjectGetter
	// Tokens issues service account tokens; without it projected
	// serviceAccountToken sources fail.
	Tokens TokenSource
	// Claims reads PersistentVolumeClaims and their PersistentVolumes;
	// without it persistentVolumeClaim volumes fail.
	Claims ClaimGetter
	// NodeAllocatable stands in for the limits a container does not set
	// in downward API resourceFieldRef items.
	NodeAllocatable corev1.ResourceList
}

func (c *Config) validate() error {
	switch {
	case c.Root == "":
		return errors.New("volumes: Root is required")
	case !filepath.IsAbs(c.Root):
		return fmt.Errorf("volumes: Root %q is not absolute", c.Root)
	case c.Getter == nil:
		return errors.New("volumes: Getter is required")
	}
	return nil
}

// Manager prepares and removes the volumes of pods. Calls for different
// pods may run concurrently; calls for one pod must not.
type Manager struct {
	cfg Config

	mu     sync.Mutex
	claims map[types.UID]map[string]claimMount // pod -> volume -> where
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Manager{cfg: cfg, claims: map[types.UID]map[string]claimMount{}}, nil
}

// validName reports whether s can be one path element.
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}

// PodDir is the directory of the pod with uid.
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.cfg.Root, "pods", string(uid))
}

// VolumeDir is where the volume name of kind lives for the pod with uid.
func (m *Manager) VolumeDir(uid types.UID, kind, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", kind, name)
}

// kindOf returns the directory kind of v, "" for hostPath, or an error for
// a volume type this kubelet does not support.
func kindOf(v *corev1.Volume) (string, error) {
	switch {
	case v.HostPath != nil, v.PersistentVolumeClaim != nil:
		return "", nil
	case v.EmptyDir != nil:
		return KindEmptyDir, nil
	case v.ConfigMap != nil:
		return KindConfigMap, nil
	case v.Secret != nil:
		return KindSecret, nil
	case v.DownwardAPI != nil:
		return KindDownwardAPI, nil
	case v.Projected != nil:
		return KindProjected, nil
	}
	return "", fmt.Errorf("volume %q: unsupported volume type", v.Name)
}

// Setup prepares every volume of pod: it creates emptyDirs, checks (or
// creates) hostPaths and writes the current content of configMap,
// secret, downwardAPI and projected volumes, atomically. It is meant to
// be called at every sync of the pod, which refreshes that content.
// Errors name the volume that failed; the volumes that could be prepared
// are.
func (m *Manager) Setup(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil || !validName(string(pod.UID)) {
		return errors.New("volumes: pod with a valid UID required")
	}
	var errs []error
	for i := range pod.Spec.Volumes {
		if err := m.setup(ctx, pod, &pod.Spec.Volumes[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) setup(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	if !validName(v.Name) {
		return fmt.Errorf("volume %q: invalid name", v.Name)
	}
	kind, err := kindOf(v)
	if err != nil {
		return err
	}
	dir := m.VolumeDir(pod.UID, kind, v.Name)
	var files map[string]file
	switch {
	case v.HostPath != nil:
		err = checkHostPath(v.HostPath)
	case v.PersistentVolumeClaim != nil:
		// SetupClaims resolves the claim (once per sandbox); a kubelet
		// restarted since then does it again here.
		if _, ok := m.claimPath(pod.UID, v.Name); !ok {
			return m.setupClaim(ctx, pod, v)
		}
	case v.EmptyDir != nil:
		// medium Memory would be a tmpfs upstream; a plain directory here.
		if err = os.MkdirAll(dir, 0o777); err == nil {
			err = os.Chmod(dir, 0o777)
		}
	case v.ConfigMap != nil:
		files, err = m.configMapFiles(ctx, pod, &v.ConfigMap.LocalObjectReference, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode))
	case v.Secret != nil:
		ref := corev1.LocalObjectReference{Name: v.Secret.SecretName}
		files, err = m.secretFiles(ctx, pod, &ref, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode))
	case v.DownwardAPI != nil:
		files, err = m.downwardFiles(pod, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode))
	case v.Projected != nil:
		files, err = m.projectedFiles(ctx, pod, v.Projected)
	}
	if err == nil && files != nil {
		err = writeAtomic(dir, files)
	}
	if err != nil {
		return fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return nil
}

func mode(m *int32) fs.FileMode {
	if m == nil {
		return defaultMode
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// configMapFiles returns the files of a configMap projection: every key,
// or the items with their paths and modes. A missing optional ConfigMap
// projects nothing.
func (m *Manager) configMapFiles(ctx context.Context, pod *corev1.Pod, ref *corev1.LocalObjectReference, items []corev1.KeyToPath, optional *bool, def fs.FileMode) (map[string]file, error) {
	opt := optional != nil && *optional
	cm, err := m.cfg.Getter.GetConfigMap(ctx, pod.Namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err) && opt:
		return map[string]file{}, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("configmap %q not found", ref.Name)
	case err != nil:
		return nil, fmt.Errorf("getting configmap %q: %w", ref.Name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, opt, def, "configmap references non-existent config key: %s")
}

// secretFiles is configMapFiles for Secrets.
func (m *Manager) secretFiles(ctx context.Context, pod *corev1.Pod, ref *corev1.LocalObjectReference, items []corev1.KeyToPath, optional *bool, def fs.FileMode) (map[string]file, error) {
	opt := optional != nil && *optional
	s, err := m.cfg.Getter.GetSecret(ctx, pod.Namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err) && opt:
		return map[string]file{}, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("secret %q not found", ref.Name)
	case err != nil:
		return nil, fmt.Errorf("getting secret %q: %w", ref.Name, err)
	}
	return keyFiles(s.Data, items, opt, def, "secret references non-existent secret key: %s")
}

// keyFiles maps data to files: every key at its own name, or only items.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, optional bool, def fs.FileMode, missing string) (map[string]file, error) {
	files := map[string]file{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = file{data: v, mode: def}
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf(missing, it.Key)
		}
		fm := def
		if it.Mode != nil {
			fm = mode(it.Mode)
		}
		files[it.Path] = file{data: v, mode: fm}
	}
	return files, nil
}

// downwardFiles returns the files of downward API items.
func (m *Manager) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def fs.FileMode) (map[string]file, error) {
	files := map[string]file{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = pods.FieldRefValue(pod, it.FieldRef, nil, nil)
		case it.ResourceFieldRef != nil:
			v, err = pods.ResourceFieldRefValue(pod, nil, it.ResourceFieldRef, m.cfg.NodeAllocatable)
		default:
			err = fmt.Errorf("downward API item %q has no source", it.Path)
		}
		if err != nil {
			return nil, err
		}
		fm := def
		if it.Mode != nil {
			fm = mode(it.Mode)
		}
		files[it.Path] = file{data: []byte(v), mode: fm}
	}
	return files, nil
}

// projectedFiles merges the sources of a projected volume.
func (m *Manager) projectedFiles(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource) (map[string]file, error) {
	def := mode(p.DefaultMode)
	files := map[string]file{}
	for i, src := range p.Sources {
		var part map[string]file
		var err error
		switch {
		case src.ConfigMap != nil:
			part, err = m.configMapFiles(ctx, pod, &src.ConfigMap.LocalObjectReference, src.ConfigMap.Items, src.ConfigMap.Optional, def)
		case src.Secret != nil:
			part, err = m.secretFiles(ctx, pod, &src.Secret.LocalObjectReference, src.Secret.Items, src.Secret.Optional, def)
		case src.DownwardAPI != nil:
			part, err = m.downwardFiles(pod, src.DownwardAPI.Items, def)
		case src.ServiceAccountToken != nil:
			part, err = m.tokenFile(ctx, pod, src.ServiceAccountToken, def)
		default:
			err = fmt.Errorf("projected source %d: unsupported source type", i)
		}
		if err != nil {
			return nil, err
		}
		for k, v := range part {
			files[k] = v
		}
	}
	return files, nil
}

func (m *Manager) tokenFile(ctx context.Context, pod *corev1.Pod, t *corev1.ServiceAccountTokenProjection, def fs.FileMode) (map[string]file, error) {
	if m.cfg.Tokens == nil {
		return nil, errors.New("serviceAccountToken projection: no token source configured")
	}
	exp := int64(3600)
	if t.ExpirationSeconds != nil {
		exp = *t.ExpirationSeconds
	}
	tok, err := m.cfg.Tokens.ServiceAccountToken(ctx, pod, t.Audience, exp)
	if err != nil {
		return nil, fmt.Errorf("getting a token for service account %q: %w", pod.Spec.ServiceAccountName, err)
	}
	return map[string]file{t.Path: {data: []byte(tok), mode: def}}, nil
}

// Cleanup removes everything the pod with uid has under the root. It does
// not follow symlinks and leaves hostPath volumes alone.
func (m *Manager) Cleanup(uid types.UID) error {
	if !validName(string(uid)) {
		return fmt.Errorf("volumes: invalid pod UID %q", uid)
	}
	m.forgetClaims(uid)
	if err := os.RemoveAll(m.PodDir(uid)); err != nil {
		return fmt.Errorf("removing volumes of pod %s: %w", uid, err)
	}
	return nil
}
