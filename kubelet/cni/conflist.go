// Package cni attaches pod network namespaces to the node's pod network
// through the standard CNI plugins (github.com/containernetworking/cni
// libcni): a Linux bridge with host-local IPAM over the node's pod CIDR,
// portmap for hostPorts, firewall and loopback; and the network namespaces
// the pods live in. ConfList builds the network
// configuration (pure); Network writes it and runs the plugins.
//
// # The node's network namespace
//
// The plugins put the bridge, its gateway address, the routes and the
// packet rules (masquerading, hostPorts, firewall) in the namespace they run
// in. By default that is the kubelet's, the host's on a real node. A
// kubelet that does not own the host (tests, several nodes on one machine)
// sets Config.NetNS to a network namespace of its own, the "node network
// namespace": every plugin then runs inside it, and Dialer reaches pods and
// hostPorts from it.
package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
)

// Defaults for Config fields left empty.
const (
	DefaultNetworkName = "kubebus"
	DefaultBridgeName  = "kubebus0"
	// CNIVersion is the spec version of the configuration; the Debian 12
	// plugins (1.1.1) support up to 1.0.0.
	CNIVersion = "1.0.0"
)

// DefaultPluginDirs are searched for the plugin binaries, in order.
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Config describes the node's pod network.
type Config struct {
	// PodCIDR is the node's pod subnet (spec.podCIDR), e.g. 10.244.1.0/24.
	PodCIDR string
	// NetworkName names the network and its configuration file
	// (default "kubebus").
	NetworkName string
	// BridgeName is the Linux bridge the pods attach to (default "kubebus0",
	// at most 15 characters).
	BridgeName string
	// MTU of the bridge and the pods' interfaces (0: the plugin's default).
	MTU int
	// PluginDirs hold the plugin binaries (default DefaultPluginDirs).
	PluginDirs []string
	// Dir holds the configuration file (<Dir>/<NetworkName>.conflist),
	// host-local's IP allocations (<Dir>/ipam) and libcni's result cache
	// (<Dir>/cache). Use a directory of the kubelet so that tests and nodes
	// do not share /var/lib/cni.
	Dir string
	// NetNS is the path of the node's network namespace (e.g.
	// /run/netns/kb-node-a). When set the plugins run inside it, so the
	// bridge, its gateway address, routes and packet rules live there and
	// not in the kubelet's own namespace; pods' namespaces are still their
	// own. Empty: the plugins run in the kubelet's namespace (a kubelet that
	// owns the host).
	NetNS string
}

var (
	linkNameRE    = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)
	networkNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// withDefaults returns cfg with empty fields defaulted, or an error naming
// the first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.NetworkName == "" {
		cfg.NetworkName = DefaultNetworkName
	}
	if cfg.BridgeName == "" {
		cfg.BridgeName = DefaultBridgeName
	}
	if len(cfg.PluginDirs) == 0 {
		cfg.PluginDirs = DefaultPluginDirs
	}
	switch {
	case cfg.PodCIDR == "":
		return cfg, errors.New("cni: no pod CIDR")
	case !networkNameRE.MatchString(cfg.NetworkName):
		return cfg, fmt.Errorf("cni: invalid network name %q", cfg.NetworkName)
	case !linkNameRE.MatchString(cfg.BridgeName):
		return cfg, fmt.Errorf("cni: invalid bridge name %q (1-15 letters, digits, '_', '.', '-')", cfg.BridgeName)
	case cfg.MTU < 0 || cfg.MTU > 65535:
		return cfg, fmt.Errorf("cni: invalid MTU %d", cfg.MTU)
	case cfg.Dir == "":
		return cfg, errors.New("cni: no directory for the configuration and IPAM state")
	case !filepath.IsAbs(cfg.Dir):
		return cfg, fmt.Errorf("cni: directory %q is not absolute", cfg.Dir)
	case cfg.NetNS != "" && !filepath.IsAbs(cfg.NetNS):
		return cfg, fmt.Errorf("cni: node network namespace path %q is not absolute", cfg.NetNS)
	}
	p, err := netip.ParsePrefix(cfg.PodCIDR)
	if err != nil {
		return cfg, fmt.Errorf("cni: invalid pod CIDR %q: %w", cfg.PodCIDR, err)
	}
	if p.Masked() != p {
		return cfg, fmt.Errorf("cni: pod CIDR %q has host bits set (want %s)", cfg.PodCIDR, p.Masked())
	}
	if p.Addr().BitLen()-p.Bits() < 2 {
		return cfg, fmt.Errorf("cni: pod CIDR %q is too small for a gateway and a pod", cfg.PodCIDR)
	}
	return cfg, nil
}

// IPAMDir is where host-local keeps the network's allocations.
func (cfg Config) IPAMDir() string { return filepath.Join(cfg.Dir, "ipam") }

// CacheDir is where libcni caches the results of ADD for DEL.
func (cfg Config) CacheDir() string { return filepath.Join(cfg.Dir, "cache") }

// ConfFile is the path of the written configuration list.
func (cfg Config) ConfFile() string {
	name := cfg.NetworkName
	if name == "" {
		name = DefaultNetworkName
	}
	return filepath.Join(cfg.Dir, name+".conflist")
}

type confList struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgeConf struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge"`
	IsGateway   bool     `json:"isGateway"`
	IPMasq      bool     `json:"ipMasq"`
	HairpinMode bool     `json:"hairpinMode"`
	MTU         int      `json:"mtu,omitempty"`
	IPAM        ipamConf `json:"ipam"`
}

type ipamConf struct {
	Type    string           `json:"type"`
	Ranges  [][]ipamRange    `json:"ranges"`
	Routes  []map[string]any `json:"routes"`
	DataDir string           `json:"dataDir"`
}

type ipamRange struct {
	Subnet string `json:"subnet"`
}

type portmapConf struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	SNAT         bool            `json:"snat"`
}

type firewallConf struct {
	Type    string `json:"type"`
	Backend string `json:"backend"`
}

type loopbackConf struct {
	Type string `json:"type"`
}

// ConfList returns the network configuration list for cfg: bridge (with
// host-local IPAM over the pod CIDR and a default route through the
// bridge), portmap (the portMappings capability), firewall (accepts the
// pod's forwarded traffic in the FORWARD chain, which Docker sets to DROP;
// bridged traffic crosses that chain when br_netfilter is loaded) and
// loopback, which brings up "lo" in the pod and passes the result through.
func ConfList(cfg Config) ([]byte, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	defaultRoute := "0.0.0.0/0"
	if netip.MustParsePrefix(cfg.PodCIDR).Addr().Is6() {
		defaultRoute = "::/0"
	}
	list := confList{
		CNIVersion: CNIVersion,
		Name:       cfg.NetworkName,
		Plugins: []any{
			bridgeConf{
				Type:        "bridge",
				Bridge:      cfg.BridgeName,
				IsGateway:   true,
				IPMasq:      true,
				HairpinMode: true,
				MTU:         cfg.MTU,
				IPAM: ipamConf{
					Type:    "host-local",
					Ranges:  [][]ipamRange{{{Subnet: cfg.PodCIDR}}},
					Routes:  []map[string]any{{"dst": defaultRoute}},
					DataDir: cfg.IPAMDir(),
				},
			},
			portmapConf{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: true},
			firewallConf{Type: "firewall", Backend: "iptables"},
			loopbackConf{Type: "loopback"},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni: encoding the configuration list: %w", err)
	}
	return append(b, '\n'), nil
}
