package bench

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/test/harness"
)

// fanoutLoad creates n pods in ns at rate per second through the REST API,
// noting in sent when each create was sent, by pod name.
func fanoutLoad(b *testing.B, cs *kubernetes.Clientset, ns string, n, rate int, sent *sync.Map) {
	ctx := context.Background()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		<-tick.C
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := benchPod(i)
			sent.Store(p.Name, time.Now())
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Errorf("create: %v", err)
			}
		}(i)
	}
	wg.Wait()
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) report(b *testing.B, expected int) {
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	if len(l.d) == 0 {
		b.Fatal("no events delivered")
	}
	b.ReportMetric(float64(expected-len(l.d)), "missed")
	b.ReportMetric(float64(l.d[len(l.d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(l.d[len(l.d)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRESTWatchFanout: 200 REST watchers on pods (client-go, each its
// own client and connection), 1,000 creates at 100/s; delivery latency from
// the create being sent to the ADDED event reaching each watcher. Watchers
// speak protobuf (as controllers do) or JSON (as kubectl does).
func BenchmarkRESTWatchFanout(b *testing.B) {
	for _, ct := range []string{"protobuf", "json"} {
		b.Run(ct, func(b *testing.B) { restWatchFanout(b, ct) })
	}
}

func restWatchFanout(b *testing.B, contentType string) {
	const watchers, pods, rate = 200, 1000, 100
	for iter := 0; iter < b.N; iter++ {
		s := harness.StartServer(b, "")
		cfg := s.RESTConfig(b)
		cfg.QPS, cfg.Burst = -1, 0
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ns := "watch"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sent := &sync.Map{}
		lat := &latencies{}
		var got atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < watchers; w++ {
			// Each watcher is its own client with its own connection, as 200
			// controllers or kubectl processes would be (a custom dialer stops
			// client-go from sharing one cached transport).
			wc := *cfg
			wc.Dial = (&net.Dialer{}).DialContext
			if contentType == "protobuf" {
				wc.ContentType = "application/vnd.kubernetes.protobuf"
				wc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			}
			wcs, err := kubernetes.NewForConfig(&wc)
			if err != nil {
				b.Fatal(err)
			}
			wi, err := wcs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for ev := range wi.ResultChan() {
					if ev.Type != watch.Added {
						continue
					}
					p := ev.Object.(*corev1.Pod)
					if t0, ok := sent.Load(p.Name); ok {
						lat.add(time.Since(t0.(time.Time)))
					}
					got.Add(1)
					if n++; n == pods {
						wi.Stop()
					}
				}
			}()
		}
		b.ResetTimer()
		fanoutLoad(b, cs, ns, pods, rate, sent)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
		}
		cancel()
		b.StopTimer()
		lat.report(b, watchers*pods)
	}
}

// BenchmarkBusFanout: N bus consumers on the pods of one namespace; 1,000
// creates at 100/s through the REST API; latency from the create being sent
// to the event reaching each consumer, ordered JetStream consumers
// (resumable, what informers build on) of the admin, over mutual TLS. (Plain
// NATS subscriptions to the object subjects, measured before issue 14, are
// no longer open to readers: the bus lets them subscribe to their own inbox
// only.)
func BenchmarkBusFanout(b *testing.B) {
	for _, tc := range []struct {
		kind      string
		consumers int
	}{{"jetstream", 1}, {"jetstream", 100}, {"jetstream", 1000}} {
		kind, consumers := tc.kind, tc.consumers
		b.Run(fmt.Sprintf("%s/consumers=%d", kind, consumers), func(b *testing.B) {
			const pods, rate = 1000, 100
			for iter := 0; iter < b.N; iter++ {
				s := harness.StartServer(b, "")
				cfg := s.RESTConfig(b)
				cfg.QPS, cfg.Burst = -1, 0
				cs, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					b.Fatal(err)
				}
				nc, js, err := bus.Connect(s.BusURL(b), "bench", s.BusCredentials(b, "kubebus-admin", "system:masters"))
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				ns := "fanout"
				if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				harness.Eventually(b, 10*time.Second, func() error { _, err := js.Stream(ctx, bus.HistoryStream); return err })
				sent := &sync.Map{}
				lat := &latencies{}
				var wg sync.WaitGroup
				for c := 0; c < consumers; c++ {
					oc, err := js.OrderedConsumer(ctx, bus.HistoryStream, jetstream.OrderedConsumerConfig{
						FilterSubjects: []string{bus.ResourceFilter("", "pods", ns)}, DeliverPolicy: jetstream.DeliverNewPolicy})
					if err != nil {
						b.Fatal(err)
					}
					wg.Add(1)
					var n atomic.Int64
					var cc jetstream.ConsumeContext
					cc, err = oc.Consume(func(m jetstream.Msg) {
						k, err := bus.ParseHistorySubject(m.Subject())
						if err == nil {
							if t0, ok := sent.Load(k.Name); ok {
								lat.add(time.Since(t0.(time.Time)))
							}
						}
						if n.Add(1) == pods {
							wg.Done()
						}
					})
					if err != nil {
						b.Fatal(err)
					}
					defer cc.Stop()
				}
				b.ResetTimer()
				fanoutLoad(b, cs, ns, pods, rate, sent)
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(90 * time.Second):
				}
				b.StopTimer()
				cancel()
				nc.Close()
				lat.report(b, consumers*pods)
			}
		})
	}
}
