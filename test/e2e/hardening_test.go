package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/test/harness"
)

// jsonPatch joins the ops in prefix and n copies of op into a JSON patch.
func jsonPatch(n int, op string, prefix ...string) []byte {
	ops := append([]string{}, prefix...)
	for range n {
		ops = append(ops, op)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// peakRSS is the most memory the process pid has held resident (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestIntegrationPatchLimits sends `kubebus server` the JSON patches
// upstream refuses: more than 10,000 operations (413, through the stock
// kubectl and client-go) and copies that double an array 30 times (a 4xx,
// with the server's peak memory growing by less than 256 MiB instead of
// the terabytes the copies would make). The object stays as it was.
func TestIntegrationPatchLimits(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ns := newTestNamespace(t, ctx, cs, "hardening-")
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	test := `{"op":"test","path":"/metadata/name","value":"target"}`
	_, err = cms.Patch(ctx, "target", types.JSONPatchType, jsonPatch(10001, test), metav1.PatchOptions{})
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("a JSON patch of 10001 operations: %v, want 413", err)
	} else if want := "The allowed maximum operations in a JSON patch is 10000, got 10001"; !strings.Contains(err.Error(), want) {
		t.Errorf("a JSON patch of 10001 operations: %v, want it to say %q", err, want)
	}
	if _, err := cms.Patch(ctx, "target", types.JSONPatchType, jsonPatch(10000, test), metav1.PatchOptions{}); err != nil {
		t.Errorf("a JSON patch of 10000 operations: %v", err)
	}

	// The stock kubectl gets the same answer.
	patchFile := filepath.Join(t.TempDir(), "patch.json")
	if err := os.WriteFile(patchFile, jsonPatch(10001, test), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, harness.Kubectl(t), "--kubeconfig", s.Kubeconfig, "-n", ns,
		"patch", "configmap", "target", "--type=json", "--patch-file", patchFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Request entity too large") {
		t.Errorf("kubectl patch of 10001 operations: %v\n%s", err, out)
	}

	seed := fmt.Sprintf(`{"op":"add","path":"/x","value":[%q]}`, strings.Repeat("a", 4<<10))
	bomb := jsonPatch(30, `{"op":"copy","from":"/x","path":"/x/-"}`, seed)
	before := peakRSS(t, s.Pid())
	_, err = cms.Patch(ctx, "target", types.JSONPatchType, bomb, metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "exceeding the limit") {
		t.Errorf("copy bomb: %v, want 422 for the copy limit", err)
	}
	if grew := peakRSS(t, s.Pid()) - before; grew > 256<<20 {
		t.Errorf("the copy bomb grew the server's peak memory by %d MiB, want at most 256", grew>>20)
	}

	got, err := cms.Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v" || len(got.Data) != 1 {
		t.Errorf("the ConfigMap changed: %v (was %v)", got.Data, cm.Data)
	}
	if logs := s.Logs(); strings.Contains(logs, "panic") {
		t.Errorf("server logged a panic:\n%s", logs)
	}
}
