package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/test/harness"
)

// etcdRevisions returns, in order, the revision of every change under
// /registry/ from revision 1 to the current one: the truth the bus must match.
func etcdRevisions(t *testing.T, endpoint string) []int64 {
	t.Helper()
	st, err := storage.New(storage.Config{Endpoints: []string{endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	head, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := st.Watch(ctx, storage.RegistryPrefix, 1)
	defer w.Stop()
	var revs []int64
	// Changes outside /registry (the publisher election) also move head, so
	// progress marks end the read when no object change is left.
	_ = w.RequestProgress()
	for ev := range w.Events {
		if ev.Type == storage.Progress {
			if ev.Revision >= head {
				break
			}
			_ = w.RequestProgress()
			continue
		}
		revs = append(revs, ev.Revision)
		if ev.Revision >= head {
			break
		}
	}
	return revs
}

// streamRevisions reads every object event on KUBE_HISTORY in stream order.
func streamRevisions(t *testing.T, js jetstream.JetStream) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := js.OrderedConsumer(ctx, bus.HistoryStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"kube.>"}})
	if err != nil {
		t.Fatal(err)
	}
	var revs []int64
	for {
		msg, err := c.Next(jetstream.FetchMaxWait(2 * time.Second))
		if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
			return revs
		}
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, bus.HeaderInt(msg.Headers(), bus.HeaderRevision))
	}
}

// durableRecorder consumes KUBE_HISTORY through a durable consumer with
// explicit acks, surviving NATS restarts, recording each revision once per
// stream sequence (a redelivery of a sequence already seen is not a new event).
type durableRecorder struct {
	mu      sync.Mutex
	revs    []int64
	lastSeq uint64
	redeliv int
}

func (d *durableRecorder) run(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	for ctx.Err() == nil {
		c, err := js.CreateOrUpdateConsumer(ctx, bus.HistoryStream, jetstream.ConsumerConfig{
			Durable: "e2e-recorder", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "kube.>", DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		it, err := c.Messages(jetstream.PullMaxMessages(500))
		if err != nil {
			continue
		}
		stopped := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				it.Stop()
			case <-stopped:
			}
		}()
		for {
			msg, err := it.Next()
			if err != nil {
				break
			}
			md, err := msg.Metadata()
			if err != nil {
				continue
			}
			d.mu.Lock()
			if md.Sequence.Stream > d.lastSeq {
				d.lastSeq = md.Sequence.Stream
				d.revs = append(d.revs, bus.HeaderInt(msg.Headers(), bus.HeaderRevision))
			} else {
				d.redeliv++
			}
			d.mu.Unlock()
			_ = msg.Ack()
			if ctx.Err() != nil {
				break
			}
		}
		it.Stop()
		close(stopped)
	}
}

func (d *durableRecorder) snapshot() []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int64(nil), d.revs...)
}

func clientFor(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 5*time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// writeChanges makes n changes to configmaps through whichever client
// answers, retrying while API servers are down.
func writeChanges(ctx context.Context, t *testing.T, clients func() *kubernetes.Clientset, n int, progress func(int)) {
	done := 0
	for i := 0; done < n; i++ {
		name := fmt.Sprintf("cm-%d", i%200)
		for ctx.Err() == nil {
			cs := clients()
			cms := cs.CoreV1().ConfigMaps("default")
			var err error
			cur, gerr := cms.Get(ctx, name, metav1.GetOptions{})
			switch {
			case gerr == nil && i%7 == 3:
				err = cms.Delete(ctx, name, metav1.DeleteOptions{})
			case gerr == nil:
				cur.Data = map[string]string{"i": fmt.Sprint(i)}
				_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
			default:
				_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
			}
			if err == nil {
				break
			}
			if strings.Contains(err.Error(), "already exists") || strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "modified") {
				break // another attempt already landed before the server died
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		done++
		progress(done)
	}
}

func equalRevs(t *testing.T, what string, want, got []int64) {
	t.Helper()
	seen := map[int64]int{}
	for i, r := range got {
		seen[r]++
		if seen[r] > 1 {
			t.Fatalf("%s: revision %d delivered twice (at %d)", what, r, i)
		}
		if i > 0 && r <= got[i-1] {
			t.Fatalf("%s: revision %d after %d: out of order", what, r, got[i-1])
		}
	}
	for _, r := range want {
		if seen[r] == 0 {
			t.Fatalf("%s: revision %d missing (have %d of %d)", what, r, len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d revisions, etcd has %d", what, len(got), len(want))
	}
}

// TestIntegrationBusExactlyOnce: 10,000 changes while the API server is
// killed and restarted and NATS is restarted; the stream and a durable
// consumer hold every etcd revision exactly once, in order.
func TestIntegrationBusExactlyOnce(t *testing.T) {
	harness.SkipShort(t)
	etcd := harness.StartEtcd(t)
	pkiDir := filepath.Join(t.TempDir(), "pki")
	nt := harness.StartNATS(t, pkiDir)
	api := harness.StartAPIServer(t, etcd.Endpoint, nt.URL(), pkiDir)
	nc, js, err := bus.Connect(nt.URL(), "e2e", nt.Credentials(t, busauth.PublisherUser))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := bus.EnsureStreams(ctx, js, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	rec := &durableRecorder{}
	rctx, stopRec := context.WithCancel(ctx)
	recDone := make(chan struct{})
	go func() { defer close(recDone); rec.run(rctx, t, js) }()

	var mu sync.Mutex
	cs := clientFor(t, api.Kubeconfig())
	clients := func() *kubernetes.Clientset { mu.Lock(); defer mu.Unlock(); return cs }
	const total = 10000
	writeChanges(ctx, t, clients, total, func(done int) {
		switch done {
		case 3000:
			t.Log("killing the API server (SIGKILL) and restarting it")
			api.Kill()
			api.Start(t)
		case 6000:
			t.Log("restarting NATS")
			nt.Stop()
			nt.Start()
		}
	})
	t.Log("writes done; reading etcd's history")
	want := etcdRevisions(t, etcd.Endpoint)
	t.Logf("etcd holds %d object revisions up to %d", len(want), want[len(want)-1])
	if len(want) < total {
		t.Fatalf("etcd saw %d object revisions, expected at least %d", len(want), total)
	}
	last := want[len(want)-1]
	harness.Eventually(t, 2*time.Minute, func() error {
		got := rec.snapshot()
		if len(got) == 0 || got[len(got)-1] < last {
			return fmt.Errorf("durable consumer at %d of %d revisions", len(got), len(want))
		}
		return nil
	})
	stopRec()
	<-recDone
	equalRevs(t, "KUBE_HISTORY", want, streamRevisions(t, js))
	equalRevs(t, "durable consumer", want, rec.snapshot())
	t.Logf("%d revisions, each exactly once in order; consumer saw %d redeliveries (deduplicated by sequence)", len(want), rec.redeliv)
}

// TestIntegrationBusPublisherFailover: two API servers; kill the one that
// publishes; the other takes over with no revision lost or duplicated.
func TestIntegrationBusPublisherFailover(t *testing.T) {
	harness.SkipShort(t)
	etcd := harness.StartEtcd(t)
	pkiDir := filepath.Join(t.TempDir(), "pki")
	nt := harness.StartNATS(t, pkiDir)
	a := harness.StartAPIServer(t, etcd.Endpoint, nt.URL(), pkiDir)
	b := harness.StartAPIServer(t, etcd.Endpoint, nt.URL(), pkiDir)
	nc, js, err := bus.Connect(nt.URL(), "e2e", nt.Credentials(t, busauth.PublisherUser))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	leader, follower := a, b
	harness.Eventually(t, 30*time.Second, func() error {
		switch {
		case strings.Contains(a.Logs(), "publisher leading"):
			leader, follower = a, b
		case strings.Contains(b.Logs(), "publisher leading"):
			leader, follower = b, a
		default:
			return errors.New("no publisher leads yet")
		}
		return nil
	})
	cs := clientFor(t, follower.Kubeconfig())
	writeChanges(ctx, t, func() *kubernetes.Clientset { return cs }, 2000, func(done int) {
		if done == 700 {
			t.Log("killing the publishing API server")
			leader.Kill()
		}
	})
	want := etcdRevisions(t, etcd.Endpoint)
	harness.Eventually(t, time.Minute, func() error {
		got := streamRevisions(t, js)
		if len(got) == 0 || got[len(got)-1] < want[len(want)-1] {
			return fmt.Errorf("stream at %d of %d revisions", len(got), len(want))
		}
		return nil
	})
	if !strings.Contains(follower.Logs(), "publisher leading") {
		t.Fatal("the surviving API server never took over publishing")
	}
	equalRevs(t, "KUBE_HISTORY after failover", want, streamRevisions(t, js))
}
