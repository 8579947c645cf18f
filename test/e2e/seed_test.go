package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/cmd/kubebus/app"
	"github.com/kubebus/kubebus/test/harness"
)

const seedReplicaSet = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: my-replicaset
spec:
  replicas: 3
  selector:
    matchLabels: {app: my-app}
  template:
    metadata:
      labels: {app: my-app}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
`

// TestIntegrationSeedReplicaSet follows the lecture notes' example on the
// all-in-one cluster: kubectl creates a ReplicaSet through the API server,
// which stores it in etcd; the controller-manager, reading the bus, creates
// its pods through the API server. The tap shows the pods were written by
// kube-controller-manager, and every component's bus consumer has caught up.
func TestIntegrationSeedReplicaSet(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	k := harness.Kubectl(t)
	if out := s.MustRun(t, k, seedReplicaSet, "apply", "-f", "-"); !strings.Contains(out, "replicaset.apps/my-replicaset created") {
		t.Fatalf("apply: %s", out)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		out, err := s.Run(t, k, "", "get", "pods", "-l", "app=my-app", "--no-headers")
		if err != nil {
			return err
		}
		if n := len(strings.Fields(strings.TrimSpace(out))) / 5; n != 3 {
			return fmt.Errorf("%d of 3 pods:\n%s", n, out)
		}
		return nil
	})
	// The pods' owner is the ReplicaSet.
	owners := s.MustRun(t, k, "", "get", "pods", "-l", "app=my-app", "-o", "jsonpath={.items[*].metadata.ownerReferences[0].name}")
	if got := strings.Fields(owners); len(got) != 3 || got[0] != "my-replicaset" {
		t.Fatalf("pod owners = %q", owners)
	}
	// Who wrote what, from the bus.
	t.Setenv("KUBECONFIG", s.Kubeconfig) // the tap's bus credentials: the admin's
	recs := tapJSON(t, s.BusURL(t), "--resource", "pods", "-n", "default", "--type", "ADDED")
	if len(recs) != 3 {
		t.Fatalf("tap shows %d pod creations, want 3", len(recs))
	}
	for _, r := range recs {
		if r["who"] != "kube-controller-manager" {
			t.Errorf("a pod was created by %v, want kube-controller-manager", r["who"])
		}
	}
	rs := tapJSON(t, s.BusURL(t), "--resource", "replicasets.apps", "--type", "ADDED")
	if len(rs) != 1 || !strings.HasPrefix(fmt.Sprint(rs[0]["who"]), "kubectl") {
		t.Errorf("tap shows the ReplicaSet created by %v, want kubectl", rs)
	}
	// Every durable consumer of the controller-manager has caught up.
	harness.Eventually(t, 30*time.Second, func() error {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := app.Run(ctx, []string{"tap", "lag", "--nats-url", s.BusURL(t)}, &out, &errb); err != nil {
			return fmt.Errorf("tap lag: %v: %s", err, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		consumers := 0
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) < 4 || !strings.HasPrefix(f[0], "kube-controller-manager") {
				continue
			}
			consumers++
			if f[3] != "0" {
				return fmt.Errorf("consumer %s has %s pending:\n%s", f[0], f[3], out.String())
			}
		}
		if consumers == 0 {
			return fmt.Errorf("tap lag lists no controller-manager consumer:\n%s", out.String())
		}
		return nil
	})
}
