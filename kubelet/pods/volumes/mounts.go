package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/pods"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Mounts returns the bind mounts of container c of pod, from its
// volumeMounts, in order. Setup must have prepared the volumes. A subPath
// (or subPathExpr, expanded over env) is created as a directory when
// missing and must not lead out of its volume through symlinks.
// configMap, secret, downwardAPI and projected volumes are always
// read-only.
func (m *Manager) Mounts(pod *corev1.Pod, c *corev1.Container, env []runtime.KeyValue) ([]runtime.Mount, error) {
	if pod == nil || c == nil || !validName(string(pod.UID)) {
		return nil, errors.New("volumes: Mounts needs a pod with a valid UID and a container")
	}
	vars := map[string]string{}
	for _, kv := range env {
		vars[kv.Key] = kv.Value
	}
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		mnt, err := m.mount(pod, vm, vars)
		if err != nil {
			return nil, fmt.Errorf("container %q: volumeMount %q: %w", c.Name, vm.Name, err)
		}
		out = append(out, mnt)
	}
	return out, nil
}

func (m *Manager) mount(pod *corev1.Pod, vm corev1.VolumeMount, vars map[string]string) (runtime.Mount, error) {
	var v *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == vm.Name {
			v = &pod.Spec.Volumes[i]
		}
	}
	if v == nil {
		return runtime.Mount{}, errors.New("no volume of that name in the pod")
	}
	if vm.MountPath == "" {
		return runtime.Mount{}, errors.New("empty mountPath")
	}
	kind, err := kindOf(v)
	if err != nil {
		return runtime.Mount{}, err
	}
	base := m.VolumeDir(pod.UID, kind, v.Name)
	if v.HostPath != nil {
		base = v.HostPath.Path
	}
	if v.PersistentVolumeClaim != nil {
		p, ok := m.claimPath(pod.UID, v.Name)
		if !ok {
			return runtime.Mount{}, errors.New("volume not set up: its claim was not resolved")
		}
		base = p
	}
	if _, err := os.Stat(base); err != nil {
		return runtime.Mount{}, fmt.Errorf("volume not set up: %w", err)
	}
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		sub = pods.Expand(vm.SubPathExpr, func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
	}
	path := base
	if sub != "" {
		if path, err = subPath(base, sub); err != nil {
			return runtime.Mount{}, err
		}
	}
	claimRO := v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
	readOnly := vm.ReadOnly || claimRO || v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
	return runtime.Mount{HostPath: path, ContainerPath: vm.MountPath, ReadOnly: readOnly}, nil
}

// subPath resolves sub inside base one element at a time, creating
// missing directories (0755) and following symlinks only while they stay
// inside base. It returns the resolved path.
func subPath(base, sub string) (string, error) {
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("subPath %q is absolute", sub)
	}
	for _, e := range strings.Split(sub, "/") {
		if e == ".." {
			return "", fmt.Errorf("subPath %q contains '..'", sub)
		}
	}
	root, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	within := func(p string) bool { return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) }
	cur := root
	for _, e := range strings.Split(filepath.Clean(sub), "/") {
		if e == "." || e == "" {
			continue
		}
		next := filepath.Join(cur, e)
		info, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(next, 0o755); err != nil {
				return "", fmt.Errorf("creating subPath %q: %w", sub, err)
			}
		case err != nil:
			return "", fmt.Errorf("subPath %q: %w", sub, err)
		case info.Mode()&fs.ModeSymlink != 0:
			if next, err = filepath.EvalSymlinks(next); err != nil {
				return "", fmt.Errorf("subPath %q: %w", sub, err)
			}
			if !within(next) {
				return "", fmt.Errorf("subPath %q leads out of the volume", sub)
			}
		}
		cur = next
	}
	return cur, nil
}
