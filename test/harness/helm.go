package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Helm returns a Helm CLI of the given major version (3 or 4): $HELM for
// Helm 3 or $HELM4 for Helm 4 when set; else helm (either major) or helm4 on
// PATH; else the one `make deps` builds into the repository's bin/ (helm,
// helm4; hack/install-deps.sh). It fails the test when there is none.
func Helm(t testing.TB, major int) string {
	t.Helper()
	env, names := "HELM", []string{"helm"}
	if major == 4 {
		env, names = "HELM4", []string{"helm4", "helm"}
	}
	want := fmt.Sprintf("v%d.", major)
	if p := os.Getenv(env); p != "" {
		if v := helmVersion(p); !strings.HasPrefix(v, want) {
			t.Fatalf("$%s=%s is Helm %q, not Helm %d", env, p, v, major)
		}
		return p
	}
	var candidates []string
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			candidates = append(candidates, p)
		}
	}
	_, file, _, _ := runtime.Caller(0)
	candidates = append(candidates, filepath.Join(filepath.Dir(file), "..", "..", "bin", names[0]))
	for _, p := range candidates {
		if strings.HasPrefix(helmVersion(p), want) {
			return p
		}
	}
	t.Fatalf("no Helm %d among %v (make deps builds it into bin/%s)", major, candidates, names[0])
	return ""
}

// helmVersion is what `helm version` says (v3.22.0), or "" when p does not
// run.
func helmVersion(p string) string {
	out, err := exec.Command(p, "version", "--template", "{{.Version}}").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// RunHelm runs helm (bin) against the server with its kubeconfig and a Helm
// home of its own under the server's directory (no user configuration, no
// repositories), and returns stdout; stderr is folded into the error.
func (s *Server) RunHelm(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	home := filepath.Join(s.Dir, "helm-home")
	cmd := exec.Command(bin, append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "HOME="+home,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &HelmError{Args: args, Err: err, Stderr: errb.String(), Stdout: out.String()}
	}
	return out.String(), nil
}

// MustRunHelm is RunHelm that fails the test on error.
func (s *Server) MustRunHelm(t testing.TB, bin string, args ...string) string {
	t.Helper()
	out, err := s.RunHelm(t, bin, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// HelmError is a failed helm run.
type HelmError struct {
	Args   []string
	Err    error
	Stderr string
	Stdout string
}

func (e *HelmError) Error() string {
	return "helm " + strings.Join(e.Args, " ") + ": " + e.Err.Error() + "\nstderr: " + e.Stderr + "\nstdout: " + e.Stdout
}
