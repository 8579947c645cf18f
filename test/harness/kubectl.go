package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Kubectl returns the stock kubectl: $KUBECTL, or kubectl on PATH.
func Kubectl(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl not found on PATH (make deps installs it): %v", err)
	}
	return p
}

// PinnedKubectl returns kubectl.<minor> (e.g. "1.32") from PATH or beside the
// stock kubectl, or "" when this machine has none.
func PinnedKubectl(t testing.TB, minor string) string {
	t.Helper()
	name := "kubectl." + minor
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if real, err := filepath.EvalSymlinks(Kubectl(t)); err == nil {
		p := filepath.Join(filepath.Dir(real), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Run runs kubectl (bin) with the server's kubeconfig and returns stdout;
// stderr is folded into the error.
func (s *Server) Run(t testing.TB, bin string, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "HOME="+s.Dir)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), &KubectlError{Args: args, Err: err, Stderr: errb.String(), Stdout: out.String()}
	}
	return out.String(), nil
}

// MustRun is Run that fails the test on error.
func (s *Server) MustRun(t testing.TB, bin, stdin string, args ...string) string {
	t.Helper()
	out, err := s.Run(t, bin, stdin, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// KubectlError is a failed kubectl run.
type KubectlError struct {
	Args   []string
	Err    error
	Stderr string
	Stdout string
}

func (e *KubectlError) Error() string {
	return "kubectl " + strings.Join(e.Args, " ") + ": " + e.Err.Error() + "\nstderr: " + e.Stderr + "\nstdout: " + e.Stdout
}
