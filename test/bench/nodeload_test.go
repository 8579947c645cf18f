package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// The node-backed workloads of issue 12, measured the way users run
// kubebus: `kubebus server` (API server, controller-manager, scheduler)
// plus `kubebus kubelet --simulate=500` as a second process whose hollow
// nodes report their pods Running, driven by one client-go clientset with
// client-go's defaults (one HTTP/2 connection shared by every goroutine;
// protobuf, which client-go's typed clients of built-in kinds prefer when
// the configuration names no content type) and no client-side rate limit.
// $KUBEBUS_BENCH_CONTENT_TYPE=application/json makes the clientset send
// and ask for JSON instead, as the benchmark did before 2026-11-30.

const (
	loadNodes   = 500
	loadClients = 32
)

// nodeLoad is a server with loadNodes Ready hollow nodes in a second
// process, and the one shared clientset that drives it.
type nodeLoad struct {
	s     *harness.Server
	nodes *harness.Process
	cs    *kubernetes.Clientset
}

// measure starts counting the CPU time of the server, the hollow nodes and
// this process (the client), and the server's time in authentication,
// authorization and admission, and profiles the server for the next d when
// $KUBEBUS_BENCH_PROFILE is set. The returned function reports the
// seconds as metrics.
func (l *nodeLoad) measure(b *testing.B, d time.Duration) (stop func()) {
	b.Helper()
	client := l.s.HTTPClient(b)
	dumpMetrics(b, client, l.s.URL, "before")
	checks := startCheckMeter(b, client, l.s.URL)
	m := startCPUMeter(b, map[string]int{"server": l.s.Pid(), "nodes": l.nodes.Pid(), "client": os.Getpid()})
	wait := profileServer(b, client, l.s.URL, d)
	return func() {
		m.report(b)
		checks.report(b)
		wait()
		dumpMetrics(b, client, l.s.URL, "after")
	}
}

// startNodeLoad starts the server (with $KUBEBUS_BENCH_SERVER_ARGS) and
// the hollow nodes, and returns once
// every node is Ready, the controller-manager leads and the scheduler's
// cache holds the last node (a probe pod is bound to it).
func startNodeLoad(b *testing.B) *nodeLoad {
	b.Helper()
	profileLength(b, 0) // a bad value fails before the set-up
	s := harness.StartServer(b, "", strings.Fields(os.Getenv("KUBEBUS_BENCH_SERVER_ARGS"))...)
	nodes := harness.StartHollowNodes(b, s, loadNodes)
	cfg := s.RESTConfig(b)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = os.Getenv("KUBEBUS_BENCH_CONTENT_TYPE")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	waitNodesReady(ctx, b, cs, loadNodes, 3*time.Minute)
	harness.Eventually(b, time.Minute, func() error {
		_, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		return err
	})
	waitSchedulerSeesNode(ctx, b, cs, fmt.Sprintf("hollow-%d", loadNodes-1))
	return &nodeLoad{s: s, nodes: nodes, cs: cs}
}

// waitNodesReady waits until n nodes are Ready.
func waitNodesReady(ctx context.Context, b *testing.B, cs kubernetes.Interface, n int, timeout time.Duration) {
	b.Helper()
	harness.Eventually(b, timeout, func() error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready != n {
			return fmt.Errorf("%d of %d nodes Ready", ready, n)
		}
		return nil
	})
}

// createPods creates n pods named by pod(i) in ns from loadClients
// goroutines sharing cs, and returns each create's latency.
func createPods(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string, n int, pod func(int) *corev1.Pod) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, n)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				_, err := cs.CoreV1().Pods(ns).Create(ctx, pod(i), metav1.CreateOptions{})
				lat[i] = time.Since(t0)
				if err != nil && failed.Add(1) <= 5 {
					b.Errorf("creating pod %d: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d of %d creates failed", failed.Load(), n)
	}
	return lat
}

// createNamespace creates ns and waits for its default ServiceAccount (the
// controller-manager makes it; pods wait for it in admission), so that a
// workload is measured in a namespace as users have it.
func createNamespace(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string) {
	b.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	harness.Eventually(b, 30*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// BenchmarkNodeLoadCreates: 32 goroutines sharing one connection create
// 2,000 pods while the scheduler binds them and the hollow nodes report
// them Running. Reports creates/s and the creates' p50/p99 latency.
//
// With $KUBEBUS_BENCH_NO_TOKEN set the pods opt out of the ServiceAccount
// token (automountServiceAccountToken: false): with every admission plugin
// on, they are then as large as pods created without the plugins, which
// tells the cost of the checks from the cost of the token volume's bytes.
// With $KUBEBUS_BENCH_POD_PAD=N every pod carries an annotation of N
// bytes: pods as many bytes larger as the token makes them, but with no
// more fields, which tells the cost of bytes from the cost of structure.
func BenchmarkNodeLoadCreates(b *testing.B) {
	const total = 2000
	pod := benchPod
	if os.Getenv("KUBEBUS_BENCH_NO_TOKEN") != "" {
		pod = func(i int) *corev1.Pod {
			p := benchPod(i)
			p.Spec.AutomountServiceAccountToken = new(false)
			return p
		}
	}
	if v := os.Getenv("KUBEBUS_BENCH_POD_PAD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 64<<10 {
			b.Fatalf("KUBEBUS_BENCH_POD_PAD=%q: want a number of bytes from 0 to 65536", v)
		}
		unpadded, pad := pod, strings.Repeat("x", n)
		pod = func(i int) *corev1.Pod {
			p := unpadded(i)
			p.Annotations = map[string]string{"bench.kubebus.io/pad": pad}
			return p
		}
	}
	l := startNodeLoad(b)
	ctx := context.Background()
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		ns := fmt.Sprintf("creates-%d", iter)
		createNamespace(ctx, b, l.cs, ns)
		stop := l.measure(b, 2*time.Second)
		b.StartTimer()
		start := time.Now()
		lat := createPods(ctx, b, l.cs, ns, total, pod)
		elapsed := time.Since(start)
		b.StopTimer()
		stop()
		p50, p99 := percentiles(lat)
		b.ReportMetric(float64(total)/elapsed.Seconds(), "creates/s")
		b.ReportMetric(p50.Seconds()*1000, "p50-ms")
		b.ReportMetric(p99.Seconds()*1000, "p99-ms")
	}
}

// BenchmarkNodeLoadPods5000: 32 goroutines sharing one connection create
// 5,000 pods; seconds from the first create until a watch (on the same
// connection) has seen all of them created, bound to a node and Running,
// and pods bound per second over that time.
func BenchmarkNodeLoadPods5000(b *testing.B) {
	const total = 5000
	l := startNodeLoad(b)
	ctx := context.Background()
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		ns := fmt.Sprintf("pods-%d", iter)
		createNamespace(ctx, b, l.cs, ns)
		w, err := l.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		stages := make(chan podStages, 1)
		go func() { stages <- watchStages(w.ResultChan(), total) }()
		stop := l.measure(b, 15*time.Second)
		b.StartTimer()
		start := time.Now()
		createPods(ctx, b, l.cs, ns, total, benchPod)
		var st podStages
		select {
		case st = <-stages:
		case <-time.After(5 * time.Minute):
			b.Fatal("the pods did not all reach Running in 5 minutes")
		}
		b.StopTimer()
		stop()
		w.Stop()
		bound := st.bound.Sub(start)
		b.ReportMetric(st.created.Sub(start).Seconds(), "s-all-created")
		b.ReportMetric(bound.Seconds(), "s-all-bound")
		b.ReportMetric(st.running.Sub(start).Seconds(), "s-all-running")
		b.ReportMetric(float64(total)/bound.Seconds(), "pods-bound/s")
	}
}

// BenchmarkNodeLoadDeployment1000: seconds from creating a Deployment of
// 1,000 replicas on the 500 hollow nodes until a watch has seen all its
// pods exist, scheduled and Running, and until the Deployment reports
// 1,000 available.
func BenchmarkNodeLoadDeployment1000(b *testing.B) {
	const replicas = 1000
	l := startNodeLoad(b)
	ctx := context.Background()
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		ns := fmt.Sprintf("deploy-%d", iter)
		createNamespace(ctx, b, l.cs, ns)
		n := int32(replicas)
		labels := map[string]string{"app": "load"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "load"}, Spec: appsv1.DeploymentSpec{
			Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}
		w, err := l.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=load"})
		if err != nil {
			b.Fatal(err)
		}
		stages := make(chan podStages, 1)
		go func() { stages <- watchStages(w.ResultChan(), replicas) }()
		stop := l.measure(b, 6*time.Second)
		b.StartTimer()
		start := time.Now()
		if _, err := l.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var st podStages
		select {
		case st = <-stages:
		case <-time.After(5 * time.Minute):
			b.Fatal("the pods did not all reach Running in 5 minutes")
		}
		w.Stop()
		harness.Eventually(b, 5*time.Minute, func() error {
			got, err := l.cs.AppsV1().Deployments(ns).Get(ctx, "load", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.AvailableReplicas != replicas {
				return fmt.Errorf("%d of %d replicas available", got.Status.AvailableReplicas, replicas)
			}
			return nil
		})
		available := time.Since(start)
		b.StopTimer()
		stop()
		b.ReportMetric(st.created.Sub(start).Seconds(), "s-all-exist")
		b.ReportMetric(st.bound.Sub(start).Seconds(), "s-all-scheduled")
		b.ReportMetric(st.running.Sub(start).Seconds(), "s-all-running")
		b.ReportMetric(available.Seconds(), "s-all-available")
	}
}
