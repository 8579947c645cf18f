package informer

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/bus"
)

// BenchmarkNodeConsumers measures what pod events on KUBE_NODEPODS cost
// when every node has its own informer, as every kubelet does: its own
// consumer, filtered to its node. The events go round-robin over the
// nodes; each informer applies its own. Reported: the CPU of this process
// per event: the NATS server, the informers (their 10 s stream checks
// included), garbage collection, and the test building and encoding the
// events, which is the same at every node count and grows with the pad.
//
// A filtered consumer on a file-store stream finds its next message by
// walking the message block from where it stopped, and nats-server copies
// every message it walks past, so the cost of an event grows with the
// number of nodes. The pad, an annotation, varies the event's size.
// store=Memory is KUBE_NODEPODS as the all-in-one keeps it, in memory,
// where nats-server reads a message's subject without copying it;
// store=File is the stream on disk, as an API server with an external
// NATS keeps it.
func BenchmarkNodeConsumers(b *testing.B) {
	for _, nodes := range []int{5, 50, 500} {
		for _, pad := range []int{0, 1024} {
			for _, store := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
				b.Run(fmt.Sprintf("nodes=%d/pad=%d/store=%s", nodes, pad, store), func(b *testing.B) {
					benchNodeConsumers(b, nodes, pad, store)
				})
			}
		}
	}
}

func benchNodeConsumers(b *testing.B, nodes, pad int, store jetstream.StorageType) {
	const batch = 2000 // events per iteration
	// No deadline: setting up 500 informers and a long -benchtime may
	// take more than testContext allows.
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	n := startNATS(b)
	js := n.connect(ctx)
	st, err := js.Stream(ctx, bus.NodePodsStream)
	if err != nil {
		b.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.Storage != store {
		cfg.Storage, cfg.MaxBytes = store, 256<<20
		if err := js.DeleteStream(ctx, bus.NodePodsStream); err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
	var applied atomic.Int64
	for i := range nodes {
		inf := newPodInformer(b, js, Config[*corev1.Pod]{Component: "kubelet", Node: nodeName(i), CheckInterval: DefaultCheckInterval})
		inf.AddHandler(HandlerFuncs[*corev1.Pod]{
			AddFunc:    func(*corev1.Pod) { applied.Add(1) },
			UpdateFunc: func(_, _ *corev1.Pod) { applied.Add(1) },
		})
		runInformer(b, ctx, inf)
		if err := inf.WaitForSync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	chains := make([]int64, nodes) // the last revision on each node's filter
	var rev, sent int64
	var size int
	cpu0 := processCPU(b)
	for b.Loop() {
		acks := make([]jetstream.PubAckFuture, 0, batch)
		for i := range batch {
			rev++
			node := int(rev) % nodes
			p := benchPod(int(rev))
			p.Spec.NodeName = nodeName(node)
			p.Annotations["pad"] = strings.Repeat("x", pad)
			ev := bus.Event{Type: bus.Added, Revision: rev, Resource: "pods", Namespace: p.Namespace, Name: p.Name, Object: mustJSON(b, p)}
			data := mustJSON(b, &ev)
			size = len(data)
			m := eventMsg(bus.NodeSubject(p.Spec.NodeName, p.Namespace, p.Name), &ev, data, chains[node])
			chains[node] = rev
			// One message per revision here, so the revision alone is a
			// unique ID (the publisher adds the node: one revision may
			// go to two nodes' filters).
			f, err := js.PublishMsgAsync(m, jetstream.WithMsgID(fmt.Sprint("r", rev)))
			if err != nil {
				b.Fatal(err)
			}
			acks = append(acks, f)
			if i%500 == 499 {
				awaitPublished(b, ctx, js)
			}
		}
		awaitPublished(b, ctx, js)
		for _, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatalf("publishing: %v", err)
			}
		}
		sent += batch
		eventually(b, time.Minute, "every informer applying its events", func() bool { return applied.Load() >= sent })
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(time.Microsecond)/float64(sent), "cpu-µs/event")
	b.ReportMetric(float64(size), "event-bytes")
}

// awaitPublished waits until every async publish so far has its answer.
func awaitPublished(b *testing.B, ctx context.Context, js jetstream.JetStream) {
	b.Helper()
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishes unanswered after a minute")
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	}
}

func nodeName(i int) string { return fmt.Sprint("node-", i) }

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
