package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// TestIntegrationServerSideApply drives `kubectl apply --server-side` of
// stock kubectl 1.32 and 1.33 against one server, each in its own
// namespace: apply, a conflict between managers, --force-conflicts, the
// managers listed in managedFields, apply on the status subresource, the
// take-over of an object client-side apply created, and
// `kubectl diff --server-side`.
func TestIntegrationServerSideApply(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	for i, minor := range []string{"1.32", "1.33"} {
		t.Run("kubectl "+minor, func(t *testing.T) {
			bin := harness.PinnedKubectl(t, minor)
			if bin == "" {
				prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
			}
			k := kubectl{s: s, bin: bin, ns: fmt.Sprintf("ssa-%d", i)}
			k.must(t, "create", "namespace", k.ns)
			cm := func(name string, data ...string) string {
				y := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n"
				for j := 0; j+1 < len(data); j += 2 {
					y += fmt.Sprintf("  %s: %q\n", data[j], data[j+1])
				}
				return y
			}

			wantLines(t, k.mustIn(t, cm("settings", "color", "blue", "size", "m"), "apply", "--server-side", "-f", "-"),
				"configmap/settings serverside-applied")

			// Another manager changing color conflicts with kubectl.
			_, err := k.run(t, cm("settings", "color", "red"), "apply", "--server-side", "--field-manager=painter", "-f", "-")
			var kerr *harness.KubectlError
			if !errors.As(err, &kerr) || !strings.Contains(kerr.Stderr, `conflict with "kubectl"`) || !strings.Contains(kerr.Stderr, ".data.color") {
				t.Fatalf("conflicting apply: want a conflict with \"kubectl\" on .data.color, got %v", err)
			}
			wantLines(t, k.mustIn(t, cm("settings", "color", "red"), "apply", "--server-side", "--field-manager=painter", "--force-conflicts", "-f", "-"),
				"configmap/settings serverside-applied")
			if got := k.must(t, "get", "configmap", "settings", "-o", "jsonpath={.data.color}/{.data.size}"); got != "red/m" {
				t.Fatalf("after the forced apply: %q, want red/m", got)
			}
			managers := k.must(t, "get", "configmap", "settings", "-o", "jsonpath={range .metadata.managedFields[*]}{.manager}:{.operation}{\"\\n\"}{end}")
			for _, want := range []string{"kubectl:Apply", "painter:Apply"} {
				if !strings.Contains(managers, want) {
					t.Fatalf("managedFields managers %q lack %s", managers, want)
				}
			}

			// kubectl diff --server-side shows the change and makes none.
			out, err := k.run(t, cm("settings", "color", "blue", "size", "l"), "diff", "--server-side", "--force-conflicts", "-f", "-")
			if !errors.As(err, &kerr) || !strings.Contains(out, "+  size: l") || !strings.Contains(out, "-  size: m") {
				t.Fatalf("diff --server-side: want exit 1 and the size change, got %v\n%s", err, out)
			}
			if got := k.must(t, "get", "configmap", "settings", "-o", "jsonpath={.data.size}"); got != "m" {
				t.Fatalf("diff changed size to %q", got)
			}

			// Apply on the status subresource.
			k.must(t, "create", "deployment", "web", "--image=busybox")
			dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nstatus:\n  replicas: 3\n  observedGeneration: 1\n"
			wantLines(t, k.mustIn(t, dep, "apply", "--server-side", "--subresource=status", "--field-manager=rollout", "-f", "-"),
				"deployment.apps/web serverside-applied")
			if got := k.must(t, "get", "deployment", "web", "-o", "jsonpath={.status.replicas}"); got != "3" {
				t.Fatalf("status.replicas after status apply: %q", got)
			}
			subs := k.must(t, "get", "deployment", "web", "-o", "jsonpath={range .metadata.managedFields[*]}{.manager}/{.subresource}{\"\\n\"}{end}")
			if !strings.Contains(subs, "rollout/status") {
				t.Fatalf("managedFields %q lack rollout on status", subs)
			}

			// An object client-side apply made is taken over.
			wantLines(t, k.mustIn(t, cm("legacy", "mode", "old"), "apply", "-f", "-"), "configmap/legacy created")
			wantLines(t, k.mustIn(t, cm("legacy", "mode", "new"), "apply", "--server-side", "-f", "-"), "configmap/legacy serverside-applied")
			if got := k.must(t, "get", "configmap", "legacy", "-o", "jsonpath={.data.mode}"); got != "new" {
				t.Fatalf("take-over left mode=%q", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got, err := cs.CoreV1().ConfigMaps(k.ns).Get(ctx, "legacy", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			applied := false
			for _, e := range got.ManagedFields {
				if e.Manager == "kubectl" && e.Operation == metav1.ManagedFieldsOperationApply && strings.Contains(string(e.FieldsV1.Raw), `"f:mode"`) {
					applied = true
				}
			}
			if !applied {
				t.Fatalf("after the take-over kubectl does not own data.mode by apply: %+v", got.ManagedFields)
			}
			if la := got.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(la, `"new"`) {
				t.Fatalf("last-applied-configuration not kept up to date: %q", la)
			}
		})
	}
}
