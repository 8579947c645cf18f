package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkPodStartup: the all-in-one server's local node (containerd,
// runc, CNI) starts 50 busybox pods whose image is present, one after the
// other; for each pod, the time from its creation to a watch seeing it
// Running, p50 and p99.
// The floor: the same image run 50 times with `ctr run` on the node's
// containerd (create, start and exit of a container, no network).
func BenchmarkPodStartup(b *testing.B) {
	const pods = 50
	for iter := 0; iter < b.N; iter++ {
		s, node := harness.StartServerWithNode(b)
		cs := s.Clientset(b)
		ctx := context.Background()
		w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "bench=startup"})
		if err != nil {
			b.Fatal(err)
		}
		// Pods are created one at a time, each once the previous one runs,
		// so each latency is the pod's own (as the ctr floor below is).
		runningCh := make(chan string, pods)
		go func() {
			seen := map[string]bool{}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type == watch.Deleted || p.Status.Phase != corev1.PodRunning || seen[p.Name] {
					continue
				}
				seen[p.Name] = true
				runningCh <- p.Name
			}
		}()
		b.ResetTimer()
		lat := make([]time.Duration, 0, pods)
		for i := range pods {
			name := fmt.Sprintf("start-%d", i)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "startup"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sleep", "3600"}}}}}
			created := time.Now()
			if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			select {
			case got := <-runningCh:
				if got != name {
					b.Fatalf("pod %s Running while waiting for %s", got, name)
				}
			case <-time.After(time.Minute):
				b.Fatalf("pod %s not Running in a minute", name)
			}
			lat = append(lat, time.Since(created))
		}
		b.StopTimer()
		w.Stop()
		p50, p99 := percentiles(lat)
		b.ReportMetric(p50.Seconds()*1000, "ms-p50-startup")
		b.ReportMetric(p99.Seconds()*1000, "ms-p99-startup")

		// The floor: ctr run on the same containerd.
		sock := filepath.Join(node.RootDir, "containerd", "containerd.sock")
		var floor []time.Duration
		for i := range pods {
			start := time.Now()
			out, err := exec.Command("ctr", "-a", sock, "-n", "k8s.kubebus.io", "run", "--rm", "docker.io/library/busybox:latest", fmt.Sprintf("floor-%d", i), "true").CombinedOutput()
			if err != nil {
				b.Fatalf("ctr run: %v: %s", err, out)
			}
			floor = append(floor, time.Since(start))
		}
		f50, f99 := percentiles(floor)
		b.ReportMetric(f50.Seconds()*1000, "ms-p50-ctr-run")
		b.ReportMetric(f99.Seconds()*1000, "ms-p99-ctr-run")
	}
}

// percentiles returns the p50 and p99 of ds.
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99)
}
