package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/cmd/kubebus/app"
	"github.com/kubebus/kubebus/test/harness"
)

// tapJSON runs `kubebus tap --since=1 --follow=false -o json` reading the
// bus at source (a nats:// URL, or a kubeconfig path to go through the API
// server) and returns one decoded record per line.
// withoutRootCA drops the events of the kube-root-ca.crt ConfigMap the
// root CA publisher keeps in every namespace.
func withoutRootCA(recs []map[string]any) []map[string]any {
	out := recs[:0]
	for _, r := range recs {
		if r["name"] != "kube-root-ca.crt" {
			out = append(out, r)
		}
	}
	return out
}

func tapJSON(t *testing.T, source string, extra ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	from := []string{"--nats-url", source}
	if !strings.HasPrefix(source, "nats://") {
		from = []string{"--kubeconfig", source}
	}
	args := append(append([]string{"tap"}, from...), append([]string{"--since=1", "--follow=false", "-o", "json"}, extra...)...)
	if err := app.Run(ctx, args, &out, &errb); err != nil {
		t.Fatalf("kubebus %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("tap -o json printed a line that is not JSON: %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// TestIntegrationTap: on a cluster that has seen N changes, `kubebus tap
// --since=1` prints exactly those N changes in revision order, as JSON that
// parses, and a MODIFIED event names the changed field paths.
func TestIntegrationTap(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	var want []string
	record := func(rv string) { want = append(want, rv) }
	for i := 0; i < 20; i++ {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tap-%d", i)}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		record(cm.ResourceVersion)
	}
	cm, err := cms.Get(ctx, "tap-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "2"
	cm.Labels = map[string]string{"tier": "front"}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	record(cm.ResourceVersion)
	// The delete's revision, from a watch (a list's revision may be newer:
	// controllers write elsewhere meanwhile).
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, FieldSelector: "metadata.name=tap-4"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, "tap-4", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Deleted {
			t.Fatalf("watch of tap-4: %s, want DELETED", ev.Type)
		}
		record(ev.Object.(*corev1.ConfigMap).ResourceVersion)
	case <-time.After(30 * time.Second):
		t.Fatal("no DELETED event for tap-4")
	}

	url := s.BusURL(t)
	t.Setenv("KUBECONFIG", s.Kubeconfig) // the tap's bus credentials: the admin's
	var recs []map[string]any
	harness.Eventually(t, 30*time.Second, func() error {
		recs = withoutRootCA(tapJSON(t, url, "--resource", "configmaps", "-n", "default"))
		if len(recs) < len(want) {
			return fmt.Errorf("tap printed %d events, want %d", len(recs), len(want))
		}
		return nil
	})
	if len(recs) != len(want) {
		t.Fatalf("tap printed %d events, the cluster made %d changes", len(recs), len(want))
	}
	for i, rec := range recs {
		if got := fmt.Sprint(rec["revision"]); got != want[i] {
			t.Fatalf("event %d: revision %s, want %s (in revision order)", i, got, want[i])
		}
	}
	mod := recs[20]
	if mod["type"] != "MODIFIED" {
		t.Fatalf("event 20 is %v, want MODIFIED", mod["type"])
	}
	changes, _ := json.Marshal(mod["changes"])
	for _, path := range []string{"data.v", "metadata.labels.tier"} {
		if !strings.Contains(string(changes), path) {
			t.Errorf("MODIFIED event's changes %s do not name %s", changes, path)
		}
	}
	if recs[21]["type"] != "DELETED" {
		t.Errorf("last event is %v, want DELETED", recs[21]["type"])
	}
	// The same through the API server, for a user with only a kubeconfig.
	remote := withoutRootCA(tapJSON(t, s.Kubeconfig, "--resource", "configmaps", "-n", "default"))
	if len(remote) != len(want) {
		t.Fatalf("tap --kubeconfig printed %d events, want %d", len(remote), len(want))
	}
	for i, rec := range remote {
		if got := fmt.Sprint(rec["revision"]); got != want[i] {
			t.Fatalf("tap --kubeconfig event %d: revision %s, want %s", i, got, want[i])
		}
	}
	// Everything, all resources: the namespaces bootstrap plus these changes.
	all := tapJSON(t, url)
	if len(all) < len(want)+4 {
		t.Fatalf("tap of everything printed %d events, want at least %d", len(all), len(want)+4)
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1]["revision"].(float64), all[i]["revision"].(float64)
		if b <= a {
			t.Fatalf("tap printed revision %v after %v", b, a)
		}
	}
}
