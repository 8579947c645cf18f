package cni

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// CreateNetNS creates a new network namespace and keeps it alive by
// bind-mounting it on path (like `ip netns add`, in a directory of the
// caller's choosing). path must not exist yet.
func CreateNetNS(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cni: creating the namespace directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("cni: creating the namespace mount point: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		// The thread is left locked: its network namespace changes, so Go
		// discards it when this goroutine ends instead of reusing it.
		goruntime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind-mounting %s: %w", src, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return fmt.Errorf("cni: creating network namespace %s: %w", path, err)
	}
	return nil
}

// RemoveNetNS unmounts and removes a namespace made by CreateNetNS. The
// namespace itself ends when no process is left in it. A missing path is
// not an error.
func RemoveNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("cni: unmounting network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cni: removing network namespace %s: %w", path, err)
	}
	return nil
}

// ErrNotNetNS is returned (wrapped) for a path that is not a network
// namespace (e.g. the mount point of a namespace that ended).
var ErrNotNetNS = errors.New("not a network namespace")

// IsNetNS reports whether path is a mounted network namespace.
func IsNetNS(path string) bool {
	h, err := netns.GetFromPath(path)
	if err != nil {
		return false
	}
	defer h.Close()
	return isNSFS(h)
}

// isNSFS reports whether h is a namespace file (of some type).
func isNSFS(h netns.NsHandle) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(h), &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// InNetNS runs fn on an OS thread that has joined the network namespace at
// path. Sockets fn opens belong to that namespace, and so do processes it
// starts (they inherit the thread's namespaces). fn must do its work on its
// own goroutine: goroutines it starts run on other threads, in the
// caller's namespace. The thread is discarded afterwards.
func InNetNS(path string, fn func() error) error {
	h, err := netns.GetFromPath(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cni: network namespace %s: %w (%v)", path, ErrNotNetNS, err)
	}
	if err != nil {
		return fmt.Errorf("cni: opening network namespace %s: %w", path, err)
	}
	defer h.Close()
	if !isNSFS(h) {
		return fmt.Errorf("cni: network namespace %s: %w", path, ErrNotNetNS)
	}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread is discarded
		if err := netns.Set(h); err != nil {
			errc <- fmt.Errorf("cni: entering network namespace %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// inScratchNetNS runs fn on an OS thread in a new, empty network namespace,
// which ends with the call (nothing keeps it). Processes fn starts inherit
// it.
func inScratchNetNS(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread is discarded
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("cni: creating a scratch network namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
