package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/test/harness/netns"
	"github.com/kubebus/kubebus/test/prereq"
)

// TestIntegrationGoldenFilesLoad has nft check (-c: parse and validate in
// the kernel, commit nothing) every golden file, in a network namespace of
// the test's own: the text form is real nft syntax.
func TestIntegrationGoldenFilesLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to create a network namespace")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		prereq.Missing(t, "needs the nft tool (Debian package nftables)")
	}
	n := netns.New(t)
	files, err := filepath.Glob("testdata/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "#") {
				keep = append(keep, l)
			}
		}
		tmp := filepath.Join(t.TempDir(), filepath.Base(f))
		if err := os.WriteFile(tmp, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := n.Exec("nft", "-c", "-f", tmp); err != nil {
			t.Errorf("%s: nft -c: %v %s", f, err, out)
		}
	}
}
