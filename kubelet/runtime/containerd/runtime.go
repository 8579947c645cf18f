package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Defaults for Config fields left empty.
const (
	DefaultNamespace   = "k8s.kubebus.io"
	DefaultSnapshotter = "overlayfs"
	// RuncShim is the containerd runtime (shim) that runs the containers.
	RuncShim = "io.containerd.runc.v2"
)

// ErrNotFound is returned (wrapped) for a sandbox, container or image the
// runtime does not hold.
var ErrNotFound = errors.New("not found")

// Network attaches sandboxes to the pod network; kubelet/cni implements it.
type Network interface {
	Setup(ctx context.Context, podID, netnsPath string, ports []runtime.PortMapping) (ip string, err error)
	Teardown(ctx context.Context, podID, netnsPath string) error
}

// Config configures a Runtime.
type Config struct {
	// Address is containerd's socket (Supervisor.Address, or an existing
	// containerd given by --container-runtime-endpoint).
	Address string
	// Namespace is the containerd namespace of the kubelet's containers and
	// images (default DefaultNamespace).
	Namespace string
	// Dir holds the sandbox records and network namespaces; it must survive
	// kubelet restarts (e.g. /var/lib/kubebus/kubelet/runtime).
	Dir string
	// Network sets up pod networking. Without it only host-network sandboxes
	// can run.
	Network Network
	// Snapshotter unpacks images (default DefaultSnapshotter).
	Snapshotter string
	// RuncRoot is runc's state directory (default: the shim's,
	// /run/containerd/runc).
	RuncRoot string
	// HostIP is reported as the IP of host-network sandboxes (default: the
	// source address of the default route, else the first global address,
	// of HostNetNS when set, else of the kubelet's network namespace).
	HostIP string
	// HostNetNS is the path of the node's network namespace (e.g.
	// /run/netns/kb-node-a; the one given to kubelet/cni as Config.NetNS)
	// when the kubelet does not own the host's: host-network sandboxes join
	// it (it is their NetNSPath) instead of the host's. Sandboxes never
	// remove it. Empty: host-network sandboxes use the host's namespace.
	HostNetNS string
	// ResolvConf is copied as the pods' /etc/resolv.conf unless a container
	// mounts its own (default /etc/resolv.conf).
	ResolvConf string
	// PauseBinary is the pause program (cmd/kubebus-pause, a static
	// binary) the runtime builds its pause image from (default:
	// PauseBinaryName beside the running executable, when it is there).
	// Without one, sandboxes have no pause container: their containers
	// share the network namespace only, each with its own IPC and PID
	// namespaces, whatever the pod asks.
	PauseBinary string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Address == "":
		return errors.New("containerd: no containerd address")
	case c.Dir == "":
		return errors.New("containerd: no runtime directory")
	case !filepath.IsAbs(c.Dir):
		return fmt.Errorf("containerd: runtime directory %q is not absolute", c.Dir)
	case c.HostNetNS != "" && !filepath.IsAbs(c.HostNetNS):
		return fmt.Errorf("containerd: host network namespace path %q is not absolute", c.HostNetNS)
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if err := identifiers.Validate(c.Namespace); err != nil {
		return fmt.Errorf("containerd: namespace %q: %w", c.Namespace, err)
	}
	if c.Snapshotter == "" {
		c.Snapshotter = DefaultSnapshotter
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.PauseBinary == "" {
		c.PauseBinary = defaultPauseBinary()
	}
	return nil
}

// Runtime runs pod sandboxes, containers and images on containerd. It keeps
// no state of its own in memory beyond the operations in flight: a new Runtime on the same containerd and
// Dir (a restarted kubelet) sees everything the previous one made. It is
// safe for concurrent use.
type Runtime struct {
	cfg    Config
	client *client.Client
	locks  keyedMutex
	// starting holds the IDs of the containers StartContainer is starting:
	// between the start being recorded and the task being made, a
	// container shows neither a task nor an exit.
	starting sync.Map
	// imageIDCache maps image targets (manifest digests) to image IDs.
	imageIDCache sync.Map
	// The pause image, built from Config.PauseBinary on first use.
	pauseOnce sync.Once
	pause     *pauseImage
	pauseErr  error
}

// New checks the node's network namespace (when HostNetNS is set), finds
// the node's IP when HostIP is empty, connects to containerd and checks
// that it answers.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.HostNetNS != "" && !cni.IsNetNS(cfg.HostNetNS) {
		return nil, fmt.Errorf("containerd: host network namespace %s: %w", cfg.HostNetNS, cni.ErrNotNetNS)
	}
	if cfg.HostIP == "" {
		ip, err := hostIP(cfg.HostNetNS)
		if err != nil {
			return nil, err
		}
		cfg.HostIP = ip
	}
	for _, d := range []string{cfg.sandboxesDir(), cfg.netnsDir(), cfg.fifoDir()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("containerd: creating %s: %w", d, err)
		}
	}
	c, err := client.New(cfg.Address, client.WithDefaultNamespace(cfg.Namespace), client.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd: connecting to %s: %w", cfg.Address, err)
	}
	r := &Runtime{cfg: cfg, client: c}
	v, err := c.Version(r.ns(ctx))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("containerd: asking %s for its version: %w", cfg.Address, err)
	}
	cfg.Logger.Debug("connected to containerd", "address", cfg.Address, "version", v.Version, "namespace", cfg.Namespace)
	return r, nil
}

// Close closes the connection to containerd. Sandboxes and containers live on.
func (r *Runtime) Close() error { return r.client.Close() }

// Version is containerd's version.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(r.ns(ctx))
	if err != nil {
		return "", fmt.Errorf("containerd: version: %w", err)
	}
	return v.Version, nil
}

// ns puts the runtime's namespace on ctx.
func (r *Runtime) ns(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

func (c *Config) sandboxesDir() string { return filepath.Join(c.Dir, "sandboxes") }
func (c *Config) netnsDir() string     { return filepath.Join(c.Dir, "netns") }
func (c *Config) fifoDir() string      { return filepath.Join(c.Dir, "fifo") }

// newID returns a random 64-hex-digit ID.
func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// validID reports whether id can name a file and a containerd object.
func validID(id string) bool {
	if id == "" || len(id) > 76 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return id[0] != '.' && id[0] != '-'
}

// notFound wraps ErrNotFound, and says what was missing.
func notFound(what, id string) error {
	return fmt.Errorf("containerd: %s %q: %w", what, id, ErrNotFound)
}

// isNotFound reports a missing object from containerd or the runtime.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) || errdefs.IsNotFound(err) }

// keyedMutex serialises operations on one sandbox or container.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// tryLock locks key unless someone holds or waits for it.
func (k *keyedMutex) tryLock(key string) (unlock func(), ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	if _, held := k.m[key]; held {
		return nil, false
	}
	e := &keyedEntry{refs: 1}
	e.mu.Lock() // new, so uncontended
	k.m[key] = e
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}, true
}

// hostIP detects the node's IP in the network namespace at netnsPath (the
// caller's when "").
func hostIP(netnsPath string) (string, error) {
	if netnsPath == "" {
		return detectHostIP(), nil
	}
	var ip string
	err := cni.InNetNS(netnsPath, func() error {
		ip = detectHostIP()
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("containerd: finding the node's IP: %w", err)
	}
	return ip, nil
}

// detectHostIP returns the source address of the default route (no packet
// is sent), else the first global unicast address, else "", in the calling
// thread's network namespace.
func detectHostIP() string {
	if c, err := net.Dial("udp", "192.0.2.1:9"); err == nil {
		defer c.Close()
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsLoopback() {
			return a.IP.String()
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
