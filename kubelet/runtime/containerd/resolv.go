package containerd

import (
	"errors"
	"fmt"
	"os"
)

// sandboxResolvConf returns what the sandbox's /etc/resolv.conf holds: the
// one the kubelet computed from the pod's dnsPolicy
// (runtime.SandboxConfig.ResolvConf) or, without one, the node's
// (Config.ResolvConf; nothing when that file is missing).
func (r *Runtime) sandboxResolvConf(s *sandboxRecord) ([]byte, error) {
	if s.ResolvConf != nil {
		return s.ResolvConf, nil
	}
	b, err := os.ReadFile(r.cfg.ResolvConf)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("containerd: reading %s: %w", r.cfg.ResolvConf, err)
	}
	return b, nil
}
