package informer

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/bus"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestIntegrationRemoveLegacyDurable: an informer deletes the durable of
// its old-format name, and no other consumer; a node informer, whose name
// did not change, deletes nothing.
func TestIntegrationRemoveLegacyDurable(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	create := func(stream, name string) {
		t.Helper()
		if _, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckAllPolicy, MemoryStorage: true}); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(stream, name string) bool {
		t.Helper()
		_, err := js.Consumer(ctx, stream, name)
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	var logs lockedBuffer
	debug := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "kube-controller-manager", Instance: "vm"})
	inf.log = debug
	old := "kube-controller-manager-core-pods-vm"
	if got := inf.cfg.legacyDurableName(); got != old || inf.durable != "kube-controller-manager_pods_vm" {
		t.Fatalf("old name %q, new name %q", got, inf.durable)
	}
	create(bus.HistoryStream, old)
	create(bus.HistoryStream, inf.durable)
	create(bus.HistoryStream, "kube-controller-manager-core-pods-other") // another instance's
	create(bus.StateStream, old)                                         // not this informer's live stream

	inf.removeLegacyDurable(ctx)
	if exists(bus.HistoryStream, old) {
		t.Fatalf("the durable of the old name %s is still there", old)
	}
	for _, c := range [][2]string{{bus.HistoryStream, inf.durable}, {bus.HistoryStream, "kube-controller-manager-core-pods-other"}, {bus.StateStream, old}} {
		if !exists(c[0], c[1]) {
			t.Fatalf("%s on %s was deleted", c[1], c[0])
		}
	}
	if !strings.Contains(logs.String(), "deleted the durable consumer of the old name") || !strings.Contains(logs.String(), old) {
		t.Fatalf("no debug line about the deletion:\n%s", logs.String())
	}
	// Nothing left to delete: nothing logged, nothing else touched.
	before := logs.String()
	inf.removeLegacyDurable(ctx)
	if logs.String() != before {
		t.Fatalf("a second call logged:\n%s", strings.TrimPrefix(logs.String(), before))
	}

	node := newPodInformer(t, js, Config[*corev1.Pod]{Component: "kubelet", Node: "n1"})
	node.log = debug
	create(bus.NodePodsStream, node.durable)
	node.removeLegacyDurable(ctx)
	if !exists(bus.NodePodsStream, node.durable) {
		t.Fatalf("the node informer deleted its own durable %s", node.durable)
	}
}

// TestIntegrationRunRemovesLegacyDurable: an informer that starts deletes
// the durable consumer of its old-format name.
func TestIntegrationRunRemovesLegacyDurable(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	ctx := testContext(t)
	js := startNATS(t).connect(ctx)
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "kube-controller-manager", Instance: "vm"})
	old := inf.cfg.legacyDurableName()
	if _, err := js.CreateConsumer(ctx, bus.HistoryStream, jetstream.ConsumerConfig{Durable: old, AckPolicy: jetstream.AckAllPolicy}); err != nil {
		t.Fatal(err)
	}
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the old durable "+old+" to go", func() bool {
		_, err := js.Consumer(ctx, bus.HistoryStream, old)
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	if _, err := js.Consumer(ctx, bus.HistoryStream, inf.durable); err != nil {
		t.Fatalf("the informer's own durable %s: %v", inf.durable, err)
	}
}
