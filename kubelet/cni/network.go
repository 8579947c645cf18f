package cni

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// IfName is the pod's interface on the pod network.
const IfName = "eth0"

// Network runs the CNI plugins of one network configuration, in the node's
// network namespace when Config.NetNS names one. It is safe for concurrent
// use (each call runs its own plugin processes; host-local locks its own
// store).
type Network struct {
	cfg  Config
	list *libcni.NetworkConfigList
	cni  *libcni.CNIConfig
}

// New validates cfg, writes the configuration list to cfg.ConfFile (when
// its content changed) and checks that the plugins and the node's network
// namespace exist.
func New(cfg Config) (*Network, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.NetNS != "" && !IsNetNS(cfg.NetNS) {
		return nil, fmt.Errorf("cni: node network namespace %s: %w", cfg.NetNS, ErrNotNetNS)
	}
	b, err := ConfList(cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.Dir, cfg.IPAMDir(), cfg.CacheDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("cni: creating %s: %w", d, err)
		}
	}
	if old, err := os.ReadFile(cfg.ConfFile()); err != nil || !bytes.Equal(old, b) {
		if err := writeFileAtomic(cfg.ConfFile(), b); err != nil {
			return nil, fmt.Errorf("cni: writing %s: %w", cfg.ConfFile(), err)
		}
	}
	list, err := libcni.ConfListFromBytes(b)
	if err != nil {
		return nil, fmt.Errorf("cni: parsing the configuration list: %w", err)
	}
	n := &Network{cfg: cfg, list: list, cni: libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.CacheDir(), nil)}
	if err := CheckPlugins(cfg.PluginDirs); err != nil {
		return nil, err
	}
	return n, nil
}

// Plugins are the plugin binaries the configuration list runs: the four of
// ConfList and bridge's IPAM plugin.
var Plugins = []string{"bridge", "host-local", "portmap", "firewall", "loopback"}

// ErrPluginMissing says a CNI plugin binary is in none of the plugin
// directories.
var ErrPluginMissing = errors.New("cni: plugin not found")

// CheckPlugins reports the first of Plugins found in none of dirs (default
// DefaultPluginDirs), wrapping ErrPluginMissing.
func CheckPlugins(dirs []string) error {
	if len(dirs) == 0 {
		dirs = DefaultPluginDirs
	}
	for _, p := range Plugins {
		if _, err := invoke.FindInPath(p, dirs); err != nil {
			return fmt.Errorf("%w: %q is in none of %v", ErrPluginMissing, p, dirs)
		}
	}
	return nil
}

// Config returns the network's configuration with defaults applied.
func (n *Network) Config() Config { return n.cfg }

// Setup attaches the network namespace at netnsPath to the pod network as
// pod podID (which must be unique on the node, e.g. the sandbox ID) with
// the given hostPorts, and returns the pod's IP. On failure it releases
// what the plugins had set up.
func (n *Network) Setup(ctx context.Context, podID, netnsPath string, ports []runtime.PortMapping) (string, error) {
	if podID == "" || netnsPath == "" {
		return "", errors.New("cni: setup needs a pod ID and a network namespace path")
	}
	rt, err := n.runtimeConf(podID, netnsPath, ports)
	if err != nil {
		return "", err
	}
	var res types.Result
	err = n.inNodeNS(func() error {
		var err error
		res, err = n.cni.AddNetworkList(ctx, n.list, rt)
		return err
	})
	if err != nil {
		// Release the address and undo partial setup.
		n.undo(ctx, rt)
		return "", fmt.Errorf("cni: adding pod %s to network %s: %w", podID, n.cfg.NetworkName, err)
	}
	ip, err := podIP(res)
	if err != nil {
		n.undo(ctx, rt)
		return "", fmt.Errorf("cni: pod %s: %w", podID, err)
	}
	return ip, nil
}

// undo runs DEL after a failed ADD; its own failure is not reported (the
// ADD's is).
func (n *Network) undo(ctx context.Context, rt *libcni.RuntimeConf) {
	_ = n.inNodeNS(func() error {
		return n.cni.DelNetworkList(context.WithoutCancel(ctx), n.list, rt)
	})
}

// inNodeNS runs fn, which runs plugins, in the node's network namespace
// when one is configured: fn runs on an OS thread that has joined it, and
// the plugin processes it forks inherit that thread's namespace.
func (n *Network) inNodeNS(fn func() error) error {
	if n.cfg.NetNS == "" {
		return fn()
	}
	return InNetNS(n.cfg.NetNS, fn)
}

// Teardown detaches pod podID from the network: removes its hostPort
// rules, its interface and releases its IP. It is idempotent. Call it
// before removing the network namespace: without the namespace the IP is
// released but the bridge plugin leaves its masquerading rules behind. When
// Config.NetNS names a namespace that is gone (and with it the bridge and
// the rules), the plugins run in a new empty namespace that ends with the
// call: the IP is released and nothing outside is touched.
func (n *Network) Teardown(ctx context.Context, podID, netnsPath string) error {
	if podID == "" {
		return errors.New("cni: teardown needs a pod ID")
	}
	// A namespace that is gone (or only its mount point left, as after a
	// reboot) is passed as none: the plugins then only release the IP.
	if netnsPath != "" && !IsNetNS(netnsPath) {
		netnsPath = ""
	}
	rt, err := n.runtimeConf(podID, netnsPath, nil)
	if err != nil {
		return err
	}
	// Give portmap the mappings ADD had, from libcni's cache.
	if _, cached, err := n.cni.GetNetworkListCachedConfig(n.list, rt); err == nil && cached != nil {
		rt.CapabilityArgs = cached.CapabilityArgs
	}
	del := func() error { return n.cni.DelNetworkList(ctx, n.list, rt) }
	if n.cfg.NetNS != "" && !IsNetNS(n.cfg.NetNS) {
		err = inScratchNetNS(del)
	} else {
		err = n.inNodeNS(del)
	}
	if err != nil {
		return fmt.Errorf("cni: removing pod %s from network %s: %w", podID, n.cfg.NetworkName, err)
	}
	return nil
}

func (n *Network) runtimeConf(podID, netnsPath string, ports []runtime.PortMapping) (*libcni.RuntimeConf, error) {
	rt := &libcni.RuntimeConf{
		ContainerID: podID,
		NetNS:       netnsPath,
		IfName:      IfName,
		Args:        [][2]string{{"IgnoreUnknown", "1"}},
	}
	if len(ports) > 0 {
		pm, err := portMappings(ports)
		if err != nil {
			return nil, err
		}
		rt.CapabilityArgs = map[string]any{"portMappings": pm}
	}
	return rt, nil
}

// portMapEntry is one entry of the portMappings capability.
type portMapEntry struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

func portMappings(ports []runtime.PortMapping) ([]portMapEntry, error) {
	out := make([]portMapEntry, 0, len(ports))
	for _, p := range ports {
		if p.HostPort <= 0 {
			continue // not a hostPort
		}
		if p.HostPort > 65535 || p.ContainerPort <= 0 || p.ContainerPort > 65535 {
			return nil, fmt.Errorf("cni: invalid port mapping %d -> %d", p.HostPort, p.ContainerPort)
		}
		proto := strings.ToLower(p.Protocol)
		switch proto {
		case "":
			proto = "tcp"
		case "tcp", "udp", "sctp":
		default:
			return nil, fmt.Errorf("cni: invalid protocol %q in port mapping %d", p.Protocol, p.HostPort)
		}
		out = append(out, portMapEntry{HostPort: int(p.HostPort), ContainerPort: int(p.ContainerPort), Protocol: proto, HostIP: p.HostIP})
	}
	return out, nil
}

// podIP returns the first address the plugins assigned to the pod's
// interface (the one inside the namespace).
func podIP(res types.Result) (string, error) {
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return "", fmt.Errorf("reading the plugins' result: %w", err)
	}
	for _, ipc := range r.IPs {
		if ipc.Interface != nil && *ipc.Interface >= 0 && *ipc.Interface < len(r.Interfaces) &&
			r.Interfaces[*ipc.Interface].Sandbox == "" {
			continue // an address on the host side
		}
		return ipc.Address.IP.String(), nil
	}
	return "", errors.New("the plugins assigned no IP address")
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
