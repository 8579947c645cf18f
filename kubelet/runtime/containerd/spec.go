package containerd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// defaultCPUPeriod is the CFS period used when a quota comes without one.
const defaultCPUPeriod = 100000

// validateContainerConfig checks what the spec options cannot reject with a
// clear error.
func validateContainerConfig(cfg *runtime.ContainerConfig) error {
	switch {
	case cfg.Name == "":
		return errors.New("containerd: a container needs a name")
	case cfg.Image == "":
		return fmt.Errorf("containerd: container %q: no image", cfg.Name)
	case cfg.Attempt < 0:
		return fmt.Errorf("containerd: container %q: negative attempt %d", cfg.Name, cfg.Attempt)
	case cfg.LogPath != "" && !filepath.IsAbs(cfg.LogPath):
		return fmt.Errorf("containerd: container %q: log path %q is not absolute", cfg.Name, cfg.LogPath)
	case cfg.WorkingDir != "" && !filepath.IsAbs(cfg.WorkingDir):
		return fmt.Errorf("containerd: container %q: working directory %q is not absolute", cfg.Name, cfg.WorkingDir)
	case cfg.CPUShares < 0 || cfg.CPUQuota < 0 || cfg.CPUPeriod < 0 || cfg.MemoryLimitBytes < 0:
		return fmt.Errorf("containerd: container %q: negative resource limit", cfg.Name)
	case cfg.CPUQuota > 0 && cfg.CPUQuota < 1000:
		return fmt.Errorf("containerd: container %q: CPU quota %dus is below the kernel's minimum of 1000us", cfg.Name, cfg.CPUQuota)
	case cfg.RunAsUser != nil && (*cfg.RunAsUser < 0 || *cfg.RunAsUser > math.MaxInt32):
		return fmt.Errorf("containerd: container %q: invalid user ID %d", cfg.Name, *cfg.RunAsUser)
	case cfg.RunAsGroup != nil && (*cfg.RunAsGroup < 0 || *cfg.RunAsGroup > math.MaxInt32):
		return fmt.Errorf("containerd: container %q: invalid group ID %d", cfg.Name, *cfg.RunAsGroup)
	}
	for _, kv := range cfg.Env {
		if kv.Key == "" || strings.ContainsAny(kv.Key, "=\x00") || strings.Contains(kv.Value, "\x00") {
			return fmt.Errorf("containerd: container %q: invalid environment variable %q", cfg.Name, kv.Key)
		}
	}
	for _, m := range cfg.Mounts {
		if !filepath.IsAbs(m.HostPath) || !filepath.IsAbs(m.ContainerPath) {
			return fmt.Errorf("containerd: container %q: mount %q -> %q: both paths must be absolute", cfg.Name, m.HostPath, m.ContainerPath)
		}
	}
	return nil
}

// imageSpecOpts applies the image's configuration and the container's
// command: Command replaces the image's entrypoint and Cmd; Args alone
// replace Cmd (as in Kubernetes).
func imageSpecOpts(image oci.Image, cfg *runtime.ContainerConfig) []oci.SpecOpts {
	if len(cfg.Command) == 0 {
		return []oci.SpecOpts{oci.WithImageConfigArgs(image, cfg.Args)}
	}
	return []oci.SpecOpts{oci.WithImageConfig(image), oci.WithProcessArgs(append(append([]string{}, cfg.Command...), cfg.Args...)...)}
}

// pauseSpecOpts are the spec options of a sandbox's pause container,
// applied after the pause image's configuration: the pod's network
// namespace (or the node's), its own UTS namespace with the pod's hostname
// (the node's for host-network pods), its own IPC and PID namespaces unless
// the pod uses the node's, a read-only root filesystem and no
// capabilities.
func pauseSpecOpts(s *sandboxRecord) []oci.SpecOpts {
	opts := []oci.SpecOpts{oci.WithRootFSReadonly(), oci.WithCapabilities(nil), oci.WithNoNewPrivileges}
	switch {
	case s.HostNetwork && s.NetNSPath != "":
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNSPath}),
			oci.WithHostNamespace(specs.UTSNamespace))
	case s.HostNetwork:
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace))
	default:
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNSPath}),
			oci.WithHostname(s.Hostname))
	}
	if s.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	}
	if s.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	return opts
}

// namespaceOpts puts a container in its sandbox's namespaces. With a pause
// process (pausePID > 0) the container joins its network, UTS and IPC
// namespaces, and its PID namespace when the pod shares one; without, it
// joins the sandbox's network namespace only. Host-network, host-IPC and
// host-PID pods have the node's namespaces instead.
func namespaceOpts(s *sandboxRecord, pausePID uint32) []oci.SpecOpts {
	nsPath := func(t string) string { return fmt.Sprintf("/proc/%d/ns/%s", pausePID, t) }
	var opts []oci.SpecOpts
	switch {
	case s.HostNetwork && s.NetNSPath != "":
		// The node's network namespace (Config.HostNetNS); the host's UTS
		// namespace, as for any host-network pod.
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNSPath}),
			oci.WithHostNamespace(specs.UTSNamespace))
	case s.HostNetwork:
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace))
	case pausePID > 0:
		// The pause process set the pod's hostname in its UTS namespace.
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNSPath}),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UTSNamespace, Path: nsPath("uts")}))
	default:
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNSPath}),
			oci.WithHostname(s.Hostname))
	}
	switch {
	case s.HostIPC:
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	case pausePID > 0:
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: nsPath("ipc")}))
	}
	switch {
	case s.HostPID:
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	case pausePID > 0 && s.ShareProcessNamespace:
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: nsPath("pid")}))
	}
	return opts
}

// withShm replaces the container's own /dev/shm with a bind mount of dir.
func withShm(dir string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		kept := s.Mounts[:0]
		for _, m := range s.Mounts {
			if filepath.Clean(m.Destination) != "/dev/shm" {
				kept = append(kept, m)
			}
		}
		s.Mounts = append(kept, specs.Mount{Destination: "/dev/shm", Type: "bind", Source: dir, Options: []string{"rbind", "rprivate", "rw", "nosuid", "nodev", "noexec"}})
		return nil
	}
}

// containerSpecOpts turns the container's configuration and its sandbox
// into spec options, applied after imageSpecOpts: environment, working
// directory, namespaces (see namespaceOpts; pausePID is the sandbox's pause
// process, 0 for none) and hostname, mounts (with the sandbox's
// /etc/hostname, /etc/hosts and /etc/resolv.conf unless the config mounts
// its own), cgroup limits, user and privileges.
func containerSpecOpts(cfg *runtime.ContainerConfig, s *sandboxRecord, sandboxDir string, pausePID uint32) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if len(cfg.Env) > 0 {
		env := make([]string, 0, len(cfg.Env))
		for _, kv := range cfg.Env {
			env = append(env, kv.Key+"="+kv.Value)
		}
		opts = append(opts, oci.WithEnv(env))
	}
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	opts = append(opts, namespaceOpts(s, pausePID)...)

	var mounts []specs.Mount
	own := map[string]bool{}
	for _, m := range cfg.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		dst := filepath.Clean(m.ContainerPath)
		own[dst] = true
		mounts = append(mounts, specs.Mount{Destination: dst, Type: "bind", Source: m.HostPath, Options: []string{"rbind", "rprivate", mode}})
	}
	if !own["/dev/shm"] {
		switch {
		case s.HostIPC:
			opts = append(opts, withShm("/dev/shm"))
		case s.SharedShm && pausePID > 0:
			opts = append(opts, withShm(filepath.Join(sandboxDir, "shm")))
		}
	}
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		dst := "/etc/" + f
		if !own[dst] {
			mounts = append(mounts, specs.Mount{Destination: dst, Type: "bind", Source: filepath.Join(sandboxDir, f), Options: []string{"rbind", "rprivate", "rw"}})
		}
	}
	opts = append(opts, oci.WithMounts(mounts))

	if cfg.CPUShares > 0 {
		opts = append(opts, oci.WithCPUShares(uint64(cfg.CPUShares)))
	}
	if cfg.CPUQuota > 0 {
		period := cfg.CPUPeriod
		if period == 0 {
			period = defaultCPUPeriod
		}
		opts = append(opts, oci.WithCPUCFS(cfg.CPUQuota, uint64(period)))
	}
	if cfg.MemoryLimitBytes > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(cfg.MemoryLimitBytes)))
	}

	switch {
	case cfg.RunAsUser != nil && cfg.RunAsGroup != nil:
		opts = append(opts, oci.WithUIDGID(uint32(*cfg.RunAsUser), uint32(*cfg.RunAsGroup)))
	case cfg.RunAsUser != nil:
		// The group comes from the image's /etc/passwd (0 when absent).
		opts = append(opts, oci.WithUserID(uint32(*cfg.RunAsUser)))
	case cfg.RunAsGroup != nil:
		gid := uint32(*cfg.RunAsGroup)
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			s.Process.User.GID = gid
			return nil
		})
	}
	if cfg.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices,
			oci.WithWriteableSysfs, oci.WithWriteableCgroupfs)
	}
	return opts
}
