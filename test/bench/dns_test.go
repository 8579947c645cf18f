package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkDNS10000Services: queries per second and latency percentiles
// of the cluster DNS with 10,000 Services, asked from a client in the
// node's network namespace (where pods' queries come from) through the
// kube-dns Service's ClusterIP, as pods ask: each of 32 workers sends A
// questions for random Services' full names over its own UDP socket, one
// at a time, for 10 s.
func BenchmarkDNS10000Services(b *testing.B) {
	const (
		services = 10000
		workers  = 32
		duration = 10 * time.Second
	)
	for iter := 0; iter < b.N; iter++ {
		s, node := harness.StartServerWithNode(b)
		cs := s.Clientset(b)
		ctx := context.Background()
		// The Services, 16 writers at a time.
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= services {
						return
					}
					_, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", i)},
						Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
					}, metav1.CreateOptions{})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		last, err := cs.CoreV1().Services("default").Get(ctx, fmt.Sprintf("svc-%05d", services-1), metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		const server = "10.96.0.10:53"
		// Until the DNS holds the last Service and the proxy routes to it.
		harness.Eventually(b, 120*time.Second, func() error {
			r, err := askInNetNS(node.NetNS, server, "svc-09999.default.svc.cluster.local.")
			if err != nil {
				return err
			}
			if len(r.Answer) != 1 || r.Answer[0].(*mdns.A).A.String() != last.Spec.ClusterIP {
				return fmt.Errorf("answer %v", r.Answer)
			}
			return nil
		})

		b.ResetTimer()
		var (
			mu        sync.Mutex
			latencies []time.Duration
			failures  atomic.Int64
		)
		deadline := time.Now().Add(duration)
		for w := range workers {
			wg.Go(func() {
				c, err := cni.Dialer(node.NetNS)(ctx, "udp", server)
				if err != nil {
					failures.Add(1)
					return
				}
				defer c.Close()
				co := &mdns.Conn{Conn: c}
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				var mine []time.Duration
				for time.Now().Before(deadline) {
					m := new(mdns.Msg).SetQuestion(fmt.Sprintf("svc-%05d.default.svc.cluster.local.", rng.IntN(services)), mdns.TypeA)
					start := time.Now()
					_ = c.SetDeadline(start.Add(2 * time.Second))
					if err := co.WriteMsg(m); err != nil {
						failures.Add(1)
						continue
					}
					r, err := co.ReadMsg()
					if err != nil || r.Id != m.Id || len(r.Answer) != 1 {
						failures.Add(1)
						continue
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		b.StopTimer()
		if len(latencies) == 0 {
			b.Fatalf("no query answered (%d failures)", failures.Load())
		}
		slices.Sort(latencies)
		pct := func(p float64) float64 {
			return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(float64(len(latencies))/duration.Seconds(), "queries/s")
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(pct(1), "max-ms")
		b.ReportMetric(float64(failures.Load()), "failures")
	}
}

// askInNetNS asks server one A question from inside a network namespace.
func askInNetNS(netns, server, name string) (*mdns.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := cni.Dialer(netns)(ctx, "udp", server)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	co := &mdns.Conn{Conn: c}
	if err := co.WriteMsg(new(mdns.Msg).SetQuestion(name, mdns.TypeA)); err != nil {
		return nil, err
	}
	return co.ReadMsg()
}
