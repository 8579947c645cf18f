package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// benchPod is a typical small pod, like the ones a ReplicaSet creates.
func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("bench-%06d", i),
			Labels: map[string]string{"app": "bench", "pod-template-hash": "5d8f9c7b6"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
			}},
		}}},
	}
}

// BenchmarkPodCreates: 32 concurrent clients create 2,000 pods through the
// REST API (each client has its own connection, as separate processes would).
// Reports creates/s and per-request latency p50/p99.
func BenchmarkPodCreates(b *testing.B) {
	const clients, total = 32, 2000
	s := harness.StartServer(b, "")
	cfg := s.RESTConfig(b)
	cfg.QPS, cfg.Burst = -1, 0
	css := make([]*kubernetes.Clientset, clients)
	for i := range css {
		c := *cfg
		c.ContentType = "application/json"
		cs, err := kubernetes.NewForConfig(&c)
		if err != nil {
			b.Fatal(err)
		}
		css[i] = cs
	}
	ctx := context.Background()
	// Warm every connection.
	for _, cs := range css {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var rates, p50s, p99s []float64
	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("bench-%d", iter)
		if _, err := css[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, total)
		var next, failed atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(cs *kubernetes.Clientset) {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= total {
						return
					}
					t0 := time.Now()
					_, err := cs.CoreV1().Pods(ns).Create(ctx, benchPod(i), metav1.CreateOptions{})
					lat[i] = time.Since(t0)
					if err != nil {
						failed.Add(1)
						b.Errorf("create %d: %v", i, err)
					}
				}
			}(css[c])
		}
		wg.Wait()
		elapsed := time.Since(start)
		if failed.Load() > 0 {
			b.Fatalf("%d creates failed", failed.Load())
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		rates = append(rates, float64(total)/elapsed.Seconds())
		p50s = append(p50s, float64(lat[total/2].Microseconds())/1000)
		p99s = append(p99s, float64(lat[total*99/100].Microseconds())/1000)
	}
	b.StopTimer()
	b.ReportMetric(median(rates), "creates/s")
	b.ReportMetric(median(p50s), "p50-ms")
	b.ReportMetric(median(p99s), "p99-ms")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
