package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// checkHostPath checks the node's path against the volume's type,
// creating it for DirectoryOrCreate (with parents, 0755) and FileOrCreate
// (an empty 0644 file; the parent must exist), as upstream. Without a
// type, a missing path is created as a directory, as containerd's CRI
// does for a missing bind-mount source.
func checkHostPath(h *corev1.HostPathVolumeSource) error {
	p := h.Path
	if !filepath.IsAbs(p) {
		return fmt.Errorf("hostPath %q is not absolute", p)
	}
	t := corev1.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	info, err := os.Stat(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hostPath %s: %w", p, err)
	}
	switch t {
	case corev1.HostPathUnset:
		if !exists {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("creating hostPath directory %s: %w", p, err)
			}
		}
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("creating hostPath directory %s: %w", p, err)
			}
			return nil
		}
		fallthrough
	case corev1.HostPathDirectory:
		if !exists || !info.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", p)
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("creating hostPath file %s: %w", p, err)
			}
			return f.Close()
		}
		fallthrough
	case corev1.HostPathFile:
		if !exists || !info.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", p)
		}
	case corev1.HostPathSocket:
		if !exists || info.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", p)
		}
	case corev1.HostPathCharDev:
		if !exists || info.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", p)
		}
	case corev1.HostPathBlockDev:
		if !exists || info.Mode().Type() != fs.ModeDevice {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", p)
		}
	default:
		return fmt.Errorf("hostPath %s: unknown type %q", p, t)
	}
	return nil
}
