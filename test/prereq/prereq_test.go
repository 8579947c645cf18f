package prereq

import (
	"os"
	"os/exec"
	"testing"
)

// TestMissingFailsWhenRequired runs Missing in a child test process with
// and without the variable and checks that it fails or skips.
func TestMissingFailsWhenRequired(t *testing.T) {
	for _, tc := range []struct {
		env      string
		wantFail bool
	}{{"1", true}, {"", false}} {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run", "^TestHelperMissing$", "-test.v")
		cmd.Env = append(cmd.Environ(), Env+"="+tc.env, "PREREQ_HELPER=1")
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("%s=%q: failed=%v, want %v:\n%s", Env, tc.env, failed, tc.wantFail, out)
		}
	}
}

func TestHelperMissing(t *testing.T) {
	if os.Getenv("PREREQ_HELPER") != "1" {
		t.Skip("helper process for TestMissingFailsWhenRequired")
	}
	Missing(t, "a tool that is not there")
}
