package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// sandboxRecord is what the runtime keeps on disk about a sandbox.
type sandboxRecord struct {
	ID          string `json:"id"`
	PodUID      string `json:"podUID"`
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Hostname    string `json:"hostname"`
	HostNetwork bool   `json:"hostNetwork,omitempty"`
	// HostIPC, HostPID and ShareProcessNamespace are the pod's choices
	// (runtime.SandboxConfig).
	HostIPC               bool `json:"hostIPC,omitempty"`
	HostPID               bool `json:"hostPID,omitempty"`
	ShareProcessNamespace bool `json:"shareProcessNamespace,omitempty"`
	// PauseContainer is the containerd ID of the sandbox's pause container
	// ("" for a sandbox made without a pause program).
	PauseContainer string `json:"pauseContainer,omitempty"`
	// SharedShm: the sandbox's /dev/shm is a tmpfs at <dir>/shm that its
	// containers share (sandboxes with a pause container and their own IPC
	// namespace).
	SharedShm    bool                  `json:"sharedShm,omitempty"`
	PortMappings []runtime.PortMapping `json:"portMappings,omitempty"`
	Labels       map[string]string     `json:"labels,omitempty"`
	ResolvConf   []byte                `json:"resolvConf,omitempty"`
	NetNSPath    string                `json:"netnsPath,omitempty"`
	IP           string                `json:"ip,omitempty"`
	State        runtime.SandboxState  `json:"state"`
	CreatedAt    time.Time             `json:"createdAt"`
}

func (s *sandboxRecord) sandbox() runtime.Sandbox {
	return runtime.Sandbox{
		ID:        s.ID,
		PodUID:    s.PodUID,
		Name:      s.Name,
		Namespace: s.Namespace,
		State:     s.State,
		IP:        s.IP,
		NetNSPath: s.NetNSPath,
		CreatedAt: s.CreatedAt,
		Labels:    maps.Clone(s.Labels),
	}
}

func (r *Runtime) sandboxDir(id string) string { return filepath.Join(r.cfg.sandboxesDir(), id) }

func (r *Runtime) readSandbox(id string) (*sandboxRecord, error) {
	if !validID(id) {
		return nil, fmt.Errorf("containerd: invalid sandbox ID %q", id)
	}
	b, err := os.ReadFile(filepath.Join(r.sandboxDir(id), "sandbox.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, notFound("sandbox", id)
	}
	if err != nil {
		return nil, fmt.Errorf("containerd: reading sandbox %s: %w", id, err)
	}
	var s sandboxRecord
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("containerd: decoding sandbox %s: %w", id, err)
	}
	// The namespace mount does not survive a reboot: such a sandbox is not
	// ready, whatever its record says. (A host-network sandbox has the
	// node's namespace, or "" for the host's.)
	if s.State == runtime.SandboxReady && (!s.HostNetwork || s.NetNSPath != "") && !cni.IsNetNS(s.NetNSPath) {
		s.State = runtime.SandboxNotReady
	}
	return &s, nil
}

func (r *Runtime) writeSandbox(s *sandboxRecord) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("containerd: encoding sandbox %s: %w", s.ID, err)
	}
	if err := writeFileAtomic(filepath.Join(r.sandboxDir(s.ID), "sandbox.json"), b, 0o600); err != nil {
		return fmt.Errorf("containerd: writing sandbox %s: %w", s.ID, err)
	}
	return nil
}

func validateSandboxConfig(cfg *runtime.SandboxConfig) error {
	switch {
	case cfg.PodUID == "" || cfg.Name == "" || cfg.Namespace == "":
		return errors.New("containerd: a sandbox needs the pod's UID, name and namespace")
	case len(cfg.Hostname) > 64 || strings.ContainsAny(cfg.Hostname, "/ \t\n\x00"):
		return fmt.Errorf("containerd: invalid hostname %q", cfg.Hostname)
	}
	for _, p := range cfg.PortMappings {
		if p.HostPort < 0 || p.HostPort > 65535 || p.ContainerPort <= 0 || p.ContainerPort > 65535 {
			return fmt.Errorf("containerd: invalid port mapping %d -> %d", p.HostPort, p.ContainerPort)
		}
	}
	return nil
}

// RunPodSandbox creates a sandbox: its record, for a pod on the pod network
// a network namespace attached through the Network, and (given a pause
// program) its pause container, which holds the pod's UTS, IPC and PID
// namespaces.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg runtime.SandboxConfig) (runtime.Sandbox, error) {
	if err := validateSandboxConfig(&cfg); err != nil {
		return runtime.Sandbox{}, err
	}
	if !cfg.HostNetwork && r.cfg.Network == nil {
		return runtime.Sandbox{}, errors.New("containerd: no pod network configured: only host-network pods can run")
	}
	s := &sandboxRecord{
		ID:                    newID(),
		PodUID:                cfg.PodUID,
		Name:                  cfg.Name,
		Namespace:             cfg.Namespace,
		Hostname:              cfg.Hostname,
		HostNetwork:           cfg.HostNetwork,
		HostIPC:               cfg.HostIPC,
		HostPID:               cfg.HostPID,
		PortMappings:          cfg.PortMappings,
		ShareProcessNamespace: cfg.ShareProcessNamespace,
		Labels:                maps.Clone(cfg.Labels),
		ResolvConf:            cfg.ResolvConf,
		State:                 runtime.SandboxNotReady,
		CreatedAt:             time.Now().UTC(),
	}
	if s.HostNetwork {
		h, err := os.Hostname()
		if err != nil {
			return runtime.Sandbox{}, fmt.Errorf("containerd: reading the node's hostname: %w", err)
		}
		s.Hostname, s.IP = h, r.cfg.HostIP
	} else if s.Hostname == "" {
		s.Hostname = strings.TrimRight(cfg.Name[:min(len(cfg.Name), 63)], "-.")
	}
	unlock := r.locks.lock(s.ID)
	defer unlock()
	log := r.cfg.Logger.With("sandbox", s.ID, "pod", cfg.Namespace+"/"+cfg.Name)

	// The record comes first, so that a crash leaves something to clean up.
	if err := os.MkdirAll(r.sandboxDir(s.ID), 0o711); err != nil {
		return runtime.Sandbox{}, fmt.Errorf("containerd: creating the sandbox directory: %w", err)
	}
	if s.HostNetwork {
		s.NetNSPath = r.cfg.HostNetNS // the node's; never created nor removed here
	} else {
		s.NetNSPath = filepath.Join(r.cfg.netnsDir(), s.ID)
	}
	if err := r.writeSandbox(s); err != nil {
		os.RemoveAll(r.sandboxDir(s.ID))
		return runtime.Sandbox{}, err
	}
	fail := func(err error) (runtime.Sandbox, error) {
		cctx := context.WithoutCancel(ctx)
		if cerr := errors.Join(r.removePause(cctx, s), unmountShm(r.shmDir(s.ID)), r.teardownSandbox(cctx, s)); cerr != nil {
			log.Error("cleaning up a sandbox that failed to start", "err", cerr)
		} else {
			os.RemoveAll(r.sandboxDir(s.ID))
		}
		return runtime.Sandbox{}, err
	}
	if !s.HostNetwork {
		if err := cni.CreateNetNS(s.NetNSPath); err != nil {
			return fail(fmt.Errorf("containerd: sandbox network namespace: %w", err))
		}
		ip, err := r.cfg.Network.Setup(ctx, s.ID, s.NetNSPath, s.PortMappings)
		if err != nil {
			return fail(fmt.Errorf("containerd: sandbox network: %w", err))
		}
		s.IP = ip
	}
	if err := r.writeEtcFiles(s); err != nil {
		return fail(err)
	}
	pause, err := r.loadPauseImage()
	if err != nil {
		return fail(err)
	}
	if pause != nil {
		// Recorded first, so that a failed start is cleaned up.
		s.PauseContainer = pauseID(s.ID)
		s.SharedShm = !s.HostIPC
		if err := r.writeSandbox(s); err != nil {
			return fail(err)
		}
		if s.SharedShm {
			if err := mountShm(r.shmDir(s.ID)); err != nil {
				return fail(err)
			}
		}
		if err := r.startPause(ctx, s); err != nil {
			return fail(fmt.Errorf("containerd: sandbox %s: %w", s.ID, err))
		}
	}
	s.State = runtime.SandboxReady
	if err := r.writeSandbox(s); err != nil {
		return fail(err)
	}
	log.Info("sandbox ready", "ip", s.IP, "hostNetwork", s.HostNetwork, "pause", s.PauseContainer != "")
	return s.sandbox(), nil
}

// writeEtcFiles writes the sandbox's hostname, hosts and resolv.conf.
func (r *Runtime) writeEtcFiles(s *sandboxRecord) error {
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if s.IP != "" && !s.HostNetwork {
		hosts += s.IP + "\t" + s.Hostname + "\n"
	}
	if s.HostNetwork {
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts = string(b)
		}
	}
	resolv, err := r.sandboxResolvConf(s)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"hostname":    []byte(s.Hostname + "\n"),
		"hosts":       []byte(hosts),
		"resolv.conf": resolv,
	} {
		if err := os.WriteFile(filepath.Join(r.sandboxDir(s.ID), name), data, 0o644); err != nil {
			return fmt.Errorf("containerd: writing the sandbox's %s: %w", name, err)
		}
	}
	return nil
}

// teardownSandbox detaches the sandbox from the network and removes its
// network namespace. A failed network teardown keeps the namespace, so that
// a retry can finish it (the bridge plugin cannot remove its rules once the
// namespace is gone). A host-network sandbox's namespace (the host's or
// Config.HostNetNS) is not the sandbox's: it stays.
func (r *Runtime) teardownSandbox(ctx context.Context, s *sandboxRecord) error {
	if s.HostNetwork || s.NetNSPath == "" {
		return nil
	}
	if r.cfg.Network != nil {
		if err := r.cfg.Network.Teardown(ctx, s.ID, s.NetNSPath); err != nil {
			return fmt.Errorf("containerd: sandbox %s: tearing down the network: %w", s.ID, err)
		}
	}
	return cni.RemoveNetNS(s.NetNSPath)
}

// StopPodSandbox kills the sandbox's running containers and its pause
// container, unmounts its /dev/shm, tears its network down and marks it
// NotReady. Stopping a stopped or missing sandbox does nothing.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	unlock := r.locks.lock(id)
	defer unlock()
	s, err := r.readSandbox(id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.stopSandbox(ctx, s)
}

func (r *Runtime) stopSandbox(ctx context.Context, s *sandboxRecord) error {
	ids, err := r.sandboxContainers(ctx, s.ID)
	if err != nil {
		return err
	}
	for _, cid := range ids {
		if err := r.StopContainer(ctx, cid, 0); err != nil {
			return fmt.Errorf("containerd: stopping sandbox %s: %w", s.ID, err)
		}
	}
	if s.PauseContainer != "" {
		if err := r.StopContainer(ctx, s.PauseContainer, 0); err != nil {
			return fmt.Errorf("containerd: stopping sandbox %s: its pause container: %w", s.ID, err)
		}
	}
	if err := unmountShm(r.shmDir(s.ID)); err != nil {
		return err
	}
	if err := r.teardownSandbox(ctx, s); err != nil {
		return err
	}
	if s.State == runtime.SandboxNotReady && s.NetNSPath == "" {
		return nil // stopped before
	}
	// The IP is released and the namespace gone: forget both.
	s.State, s.NetNSPath = runtime.SandboxNotReady, ""
	if !s.HostNetwork {
		s.IP = ""
	}
	if err := r.writeSandbox(s); err != nil {
		return err
	}
	r.cfg.Logger.Info("sandbox stopped", "sandbox", s.ID, "pod", s.Namespace+"/"+s.Name)
	return nil
}

// RemovePodSandbox stops the sandbox if needed, removes its containers
// (its pause container too) and forgets it. Removing a missing sandbox does
// nothing.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	unlock := r.locks.lock(id)
	defer unlock()
	s, err := r.readSandbox(id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := r.stopSandbox(ctx, s); err != nil {
		return err
	}
	ids, err := r.sandboxContainers(ctx, id)
	if err != nil {
		return err
	}
	for _, cid := range ids {
		if err := r.RemoveContainer(ctx, cid); err != nil {
			return fmt.Errorf("containerd: removing sandbox %s: %w", id, err)
		}
	}
	if err := r.removePause(ctx, s); err != nil {
		return err
	}
	if err := os.RemoveAll(r.sandboxDir(id)); err != nil {
		return fmt.Errorf("containerd: removing sandbox %s: %w", id, err)
	}
	r.cfg.Logger.Info("sandbox removed", "sandbox", id, "pod", s.Namespace+"/"+s.Name)
	return nil
}

// ListPodSandboxes returns every sandbox the runtime holds, oldest first.
func (r *Runtime) ListPodSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	entries, err := os.ReadDir(r.cfg.sandboxesDir())
	if err != nil {
		return nil, fmt.Errorf("containerd: listing sandboxes: %w", err)
	}
	var out []runtime.Sandbox
	var running map[string]bool // pause containers, listed on first need
	for _, e := range entries {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		s, err := r.readSandbox(e.Name())
		if isNotFound(err) {
			continue // being created or removed
		}
		if err != nil {
			return nil, err
		}
		if s.State == runtime.SandboxReady && s.PauseContainer != "" {
			if running == nil {
				if running, err = r.runningPauses(ctx); err != nil {
					return nil, err
				}
			}
			if !running[s.PauseContainer] {
				s.State = runtime.SandboxNotReady
			}
		}
		out = append(out, s.sandbox())
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// PodSandboxStatus returns one sandbox. A sandbox whose pause process is
// gone is NotReady.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string) (runtime.Sandbox, error) {
	s, err := r.readSandbox(id)
	if err != nil {
		return runtime.Sandbox{}, err
	}
	if s.State == runtime.SandboxReady && s.PauseContainer != "" {
		if _, err := r.pausePID(ctx, s); err != nil {
			s.State = runtime.SandboxNotReady
		}
	}
	return s.sandbox(), nil
}

func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
