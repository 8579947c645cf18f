package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkMemoryRounds: the all-in-one server's resident memory (VmRSS)
// with 500 hollow nodes (`kubebus kubelet --simulate=500`, a second
// process), after each of three rounds of: 5,000 pods created (32
// goroutines on one shared connection) and Running, a 1,000-replica
// Deployment Running, then everything deleted again. It reports the RSS at
// the loaded state and 150 s after the objects are gone (an idle Go
// process collects only when forced, every 2 minutes) per round. With
// KUBEBUS_BENCH_PROFILES set to a directory, it saves the server's heap
// profiles there (loaded and deleted, last round) for `go tool pprof
// -top`. KUBEBUS_BENCH_SERVER_ARGS adds flags to the server (such as
// --memory-limit=512Mi).
//
// One iteration takes several minutes: run it with -benchtime=1x.
func BenchmarkMemoryRounds(b *testing.B) {
	const nodes, pods, replicas, rounds = 500, 5000, 1000, 3
	for iter := 0; iter < b.N; iter++ {
		s := harness.StartServer(b, "", strings.Fields(os.Getenv("KUBEBUS_BENCH_SERVER_ARGS"))...)
		cs := s.Clientset(b)
		harness.StartHollowNodes(b, s, nodes)
		waitNodesReady(context.Background(), b, cs, nodes, 2*time.Minute)
		b.Logf("%d nodes Ready: server RSS %.0f MB", nodes, rssMB(b, s.Pid()))
		for r := 1; r <= rounds; r++ {
			t0 := time.Now()
			createRunningPods(b, cs, pods)
			t1 := time.Now()
			runDeployment(b, cs, replicas)
			t2 := time.Now()
			loaded, loadedParts := rssMB(b, s.Pid()), rssParts(b, s.Pid())
			if r == rounds {
				saveHeapProfile(b, s, "loaded")
			}
			deleteRound(b, cs)
			atOnce := rssMB(b, s.Pid())
			deleted := settledRSS(b, s.Pid())
			if r == rounds {
				saveHeapProfile(b, s, "deleted")
			}
			b.Logf("round %d: RSS %.0f MB loaded (%s; %d pods + %d replicas Running on %d nodes), %.0f MB when the deletion was done, %.0f MB %v later (%s); pods Running in %.1f s, Deployment available in %.1f s",
				r, loaded, loadedParts, pods, replicas, nodes, atOnce, deleted, settleFor, rssParts(b, s.Pid()), t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds())
			b.ReportMetric(loaded, fmt.Sprintf("MB-loaded-r%d", r))
			b.ReportMetric(deleted, fmt.Sprintf("MB-deleted-r%d", r))
		}
	}
}

// createRunningPods creates n pods labelled app=mem (createPods: 32
// goroutines sharing one client) and waits until a watch saw all of them Running.
func createRunningPods(b *testing.B, cs kubernetes.Interface, n int) {
	b.Helper()
	ctx := context.Background()
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=mem"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	stages := make(chan podStages, 1)
	go func() { stages <- watchStages(w.ResultChan(), n) }()
	createPods(ctx, b, cs, "default", n, func(i int) *corev1.Pod {
		p := benchPod(i)
		p.Name = fmt.Sprintf("mem-%05d", i)
		p.Labels = map[string]string{"app": "mem"}
		return p
	})
	select {
	case <-stages:
	case <-time.After(5 * time.Minute):
		b.Fatalf("the %d pods were not all Running after 5 minutes", n)
	}
}

// runDeployment creates a Deployment of n replicas labelled app=mem-run and
// waits until it reports them available.
func runDeployment(b *testing.B, cs kubernetes.Interface, n int) {
	b.Helper()
	ctx := context.Background()
	r := int32(n)
	labels := map[string]string{"app": "mem-run"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "mem-run"}, Spec: appsv1.DeploymentSpec{
		Replicas: &r, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	harness.Eventually(b, 5*time.Minute, func() error {
		got, err := cs.AppsV1().Deployments("default").Get(ctx, "mem-run", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.AvailableReplicas != r {
			return fmt.Errorf("%d of %d replicas available", got.Status.AvailableReplicas, r)
		}
		return nil
	})
}

// deleteRound deletes the Deployment (its ReplicaSet and pods go with it
// through the garbage collector) and the pods, and waits until no pod and
// no ReplicaSet is left.
func deleteRound(b *testing.B, cs kubernetes.Interface) {
	b.Helper()
	ctx := context.Background()
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "mem-run", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		b.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=mem"}); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(pods.Items) == 0 && len(rss.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d pods and %d ReplicaSets left 5 minutes after the deletion", len(pods.Items), len(rss.Items))
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// settleFor is how long the RSS is watched after a deletion: past the
// runtime's forced collection of an idle process (every 2 minutes) and the
// watch hubs' 2-minute history.
const settleFor = 150 * time.Second

// settledRSS reads the RSS every 10 s for settleFor and returns the last
// reading: an idle process collects garbage only when forced, so the RSS
// right after a deletion is the peak's.
func settledRSS(b *testing.B, pid int) float64 {
	b.Helper()
	last := rssMB(b, pid)
	for deadline := time.Now().Add(settleFor); time.Now().Before(deadline); {
		<-time.After(10 * time.Second)
		last = rssMB(b, pid)
	}
	return last
}

// rssMB reads a process's resident set size (VmRSS) in MB (10^6 bytes).
func rssMB(b *testing.B, pid int) float64 { return procStatusMB(b, pid, "VmRSS") }

// rssParts describes the RSS: anonymous (the Go heap and stacks) and
// file-backed (etcd's memory-mapped database, the binary).
func rssParts(b *testing.B, pid int) string {
	return fmt.Sprintf("anon %.0f MB, file %.0f MB", procStatusMB(b, pid, "RssAnon"), procStatusMB(b, pid, "RssFile"))
}

// procStatusMB reads a kB field of /proc/PID/status in MB (10^6 bytes).
func procStatusMB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatalf("parsing %s %q: %v", field, rest, err)
			}
			return kb * 1024 / 1e6
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// saveHeapProfile stores the server's heap profile as heap-<name>.pb.gz in
// $KUBEBUS_BENCH_PROFILES, when set.
func saveHeapProfile(b *testing.B, s *harness.Server, name string) {
	b.Helper()
	dir := os.Getenv("KUBEBUS_BENCH_PROFILES")
	if dir == "" {
		return
	}
	resp, err := s.HTTPClient(b).Get(s.URL + "/debug/pprof/heap")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("heap profile: %s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "heap-"+name+".pb.gz"), data, 0o644); err != nil {
		b.Fatal(err)
	}
}
