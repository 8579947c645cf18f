// Package prereq decides what a test does when something it needs from the
// machine is missing (root, a tool, a kernel feature, a package): outside
// `make test` it skips, naming what is missing; under `make test`, which
// sets KUBEBUS_REQUIRE_PREREQS=1 after installing everything, it fails, so
// a green `make test` means the privileged tests really ran.
package prereq

import (
	"os"
	"os/exec"
	"testing"
)

// Env is the variable that turns a missing prerequisite into a failure.
const Env = "KUBEBUS_REQUIRE_PREREQS"

// Required reports whether missing prerequisites fail tests.
func Required() bool { return os.Getenv(Env) == "1" }

// Missing skips t (fails it under make test) because of what is missing.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("missing prerequisite ("+Env+"=1): "+format, args...)
	}
	t.Skipf(format, args...)
}

// Root needs the test process to run as root, for what.
func Root(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root to %s", what)
	}
}

// Tool needs name on PATH; pkg is the Debian package that brings it.
func Tool(t testing.TB, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		Missing(t, "%s not on PATH (Debian package %s; make deps installs it)", name, pkg)
	}
}
