package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/kubebus/kubebus/kubelet/cni"
)

// PreflightConfig names what a real node needs from the machine.
type PreflightConfig struct {
	// OwnContainerd is set when the kubelet starts a containerd of its own
	// (no --container-runtime-endpoint): then containerd must be installed.
	OwnContainerd bool
	// CNIPluginDirs are searched for the CNI plugins (default cni's).
	CNIPluginDirs []string
	// NetNS is the node network namespace's path, when one is used.
	NetNS string
	// LookPath and EUID default to exec.LookPath and os.Geteuid.
	LookPath func(string) (string, error)
	EUID     func() int
}

// ErrPreflight is wrapped by every error Preflight returns.
var ErrPreflight = errors.New("the node cannot start")

const installHint = "install it with `make deps` (hack/install-deps.sh) or `apt-get install %s`"

// Preflight checks, before anything starts, that a real node can run on
// this machine: root, containerd and runc, the CNI plugins and the node
// network namespace. The error names the first thing missing and the fix.
func Preflight(c PreflightConfig) error {
	if c.LookPath == nil {
		c.LookPath = exec.LookPath
	}
	if c.EUID == nil {
		c.EUID = os.Geteuid
	}
	if c.EUID() != 0 {
		return fmt.Errorf("%w: it runs containers and needs root (run as root)", ErrPreflight)
	}
	bins := []string{"runc"}
	if c.OwnContainerd {
		bins = []string{"containerd", "runc"}
	}
	for _, b := range bins {
		if _, err := c.LookPath(b); err != nil {
			return fmt.Errorf("%w: %s is not on PATH; "+installHint, ErrPreflight, b, b)
		}
	}
	if err := cni.CheckPlugins(c.CNIPluginDirs); err != nil {
		return fmt.Errorf("%w: %w; "+installHint+", or point --cni-bin-dir at them", ErrPreflight, err, "containernetworking-plugins")
	}
	if c.NetNS != "" && !cni.IsNetNS(c.NetNS) {
		return fmt.Errorf("%w: %s is not a network namespace (create it with `ip netns add NAME`, as `make up` does)", ErrPreflight, c.NetNS)
	}
	return nil
}
