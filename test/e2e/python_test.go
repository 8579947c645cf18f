package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/test/harness"
)

// python is Debian's interpreter, which python3-kubernetes installs into;
// a pyenv python first on PATH would not see the package.
const python = "/usr/bin/python3"

// requirePythonClient fails the test when the official Python client is
// missing: a run that skipped it would prove nothing.
func requirePythonClient(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import kubernetes; print(kubernetes.__version__)").CombinedOutput()
	if err != nil {
		t.Fatalf("the Python client is not installed (%s -c 'import kubernetes': %v: %s); `make deps` installs it (Debian package python3-kubernetes)",
			python, err, strings.TrimSpace(string(out)))
	}
	t.Logf("Python client %s", strings.TrimSpace(string(out)))
}

// runPython runs testdata/python/<script>.py against the server in a
// namespace of its own and fails with the script's output when it exits
// non-zero.
func runPython(t *testing.T, s *harness.Server, script string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script+".py")
	cmd.Dir = filepath.Join("testdata", "python")
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+s.Kubeconfig,
		"KUBEBUS_TEST_NS=py-"+script,
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"TMPDIR="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s.py failed (%v):\n%s", script, err, out)
	}
	if !strings.Contains(string(out), "ok: "+script) {
		t.Fatalf("%s.py exited 0 without reporting ok:\n%s", script, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// TestIntegrationPythonClient drives the all-in-one with the official
// Python client (python3-kubernetes) as Ansible's kubernetes.core and
// Airflow use it. It covers the three failures the client reported before
// the API server read requests as upstream does: VersionApi().get_code()
// and ApisApi().get_api_versions() (paths with a trailing slash) in
// discovery.py, and watch.Watch().stream(), which sends watch=True, in
// watch.py. The controller manager runs: delete.py needs the garbage
// collector for Foreground and Background propagation.
func TestIntegrationPythonClient(t *testing.T) {
	harness.SkipShort(t)
	requirePythonClient(t)
	s := harness.StartServer(t, "")
	for _, script := range []string{
		"discovery",    // version and discovery
		"crud",         // core and apps CRUD
		"list",         // selectors and pagination
		"watch",        // from now and from a resourceVersion
		"patch",        // strategic, merge and JSON patch
		"subresources", // scale and status
		"delete",       // propagation: Foreground, Background, Orphan
		"dynamic",      // kubernetes.dynamic.DynamicClient
	} {
		t.Run(script, func(t *testing.T) { runPython(t, s, script) })
	}
}
