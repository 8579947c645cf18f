package agent

import (
	"testing"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// TestFingerprintExit: a relist resyncs a pod whenever what the runtime
// says about a container changes, its exit code and reason included, and
// only then.
func TestFingerprintExit(t *testing.T) {
	sbs := []runtime.Sandbox{{ID: "sb", State: runtime.SandboxReady}}
	fp := func(c runtime.Container) string {
		c.ID = "c1"
		return fingerprint(sbs, []runtime.Container{c})
	}
	created := fp(runtime.Container{State: runtime.ContainerCreated})
	running := fp(runtime.Container{State: runtime.ContainerRunning})
	lost := fp(runtime.Container{State: runtime.ContainerExited, ExitCode: 255, Reason: "Error"})
	failed := fp(runtime.Container{State: runtime.ContainerExited, ExitCode: 1, Reason: "Error"})
	done := fp(runtime.Container{State: runtime.ContainerExited, Reason: "Completed"})
	all := []string{created, running, lost, failed, done}
	for i := range all {
		for j := range all {
			if i != j && all[i] == all[j] {
				t.Errorf("fingerprints %d and %d are both %q", i, j, all[i])
			}
		}
	}
	// Times and the like do not count: they change nothing the kubelet does.
	if again := fp(runtime.Container{State: runtime.ContainerRunning, Attempt: 0, LogPath: "/x"}); again != running {
		t.Errorf("fingerprint changed with fields that do not count: %q != %q", again, running)
	}
}
