package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkExecRoundTrip: the all-in-one server's local node runs one
// busybox pod; `echo hi` is exec'd in it 100 times one after the other,
// through the API server and the kubelet to containerd, and each round
// trip (request to exit status, output included) is timed, p50 and p99:
// with client-go over SPDY, over WebSocket (v5, translated to SPDY by the
// API server), and with the stock kubectl (process start included).
// The floor: `ctr task exec` of the same command on the node's containerd.
func BenchmarkExecRoundTrip(b *testing.B) {
	const execs = 100
	for iter := 0; iter < b.N; iter++ {
		s, node := harness.StartServerWithNode(b)
		cs := s.Clientset(b)
		ctx := context.Background()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exec-bench"},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c", Image: "busybox:latest",
				ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "3600"}}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var containerID string
		harness.Eventually(b, time.Minute, func() error {
			got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning || len(got.Status.ContainerStatuses) == 0 {
				return fmt.Errorf("pod is %s", got.Status.Phase)
			}
			containerID = got.Status.ContainerStatuses[0].ContainerID
			return nil
		})
		u, err := url.Parse(cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(p.Name).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: "c", Command: []string{"echo", "hi"}, Stdout: true}, scheme.ParameterCodec).URL().String())
		if err != nil {
			b.Fatal(err)
		}
		cfg := s.RESTConfig(b)
		executors := []struct {
			name string
			make func() (remotecommand.Executor, error)
		}{
			{"spdy", func() (remotecommand.Executor, error) { return remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u) }},
			{"websocket", func() (remotecommand.Executor, error) {
				return remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
			}},
		}
		b.ResetTimer()
		for _, e := range executors {
			lat := make([]time.Duration, 0, execs)
			for range execs {
				start := time.Now()
				ex, err := e.make()
				if err != nil {
					b.Fatal(err)
				}
				var out bytes.Buffer
				if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out}); err != nil {
					b.Fatalf("exec over %s: %v", e.name, err)
				}
				lat = append(lat, time.Since(start))
				if out.String() != "hi\n" {
					b.Fatalf("exec over %s printed %q", e.name, out.String())
				}
			}
			p50, p99 := percentiles(lat)
			b.ReportMetric(p50.Seconds()*1000, "ms-p50-"+e.name)
			b.ReportMetric(p99.Seconds()*1000, "ms-p99-"+e.name)
		}
		kubectl := harness.Kubectl(b)
		lat := make([]time.Duration, 0, execs)
		for range execs {
			start := time.Now()
			cmd := exec.Command(kubectl, "--kubeconfig", s.Kubeconfig, "exec", p.Name, "--", "echo", "hi")
			cmd.Env = append(os.Environ(), "HOME="+s.Dir)
			// Stdout only: client-go's WebSocket client may log that it
			// discarded the empty "connected" message upstream's stream
			// translator sends before the client made its streams.
			if out, err := cmd.Output(); err != nil || string(out) != "hi\n" {
				b.Fatalf("kubectl exec: %v: %s", err, out)
			}
			lat = append(lat, time.Since(start))
		}
		p50, p99 := percentiles(lat)
		b.ReportMetric(p50.Seconds()*1000, "ms-p50-kubectl")
		b.ReportMetric(p99.Seconds()*1000, "ms-p99-kubectl")
		b.StopTimer()

		// The floor: ctr task exec on the same containerd.
		sock := filepath.Join(node.RootDir, "containerd", "containerd.sock")
		id := containerID[len("containerd://"):]
		var floor []time.Duration
		for i := range execs {
			start := time.Now()
			out, err := exec.Command("ctr", "-a", sock, "-n", "k8s.kubebus.io", "task", "exec", "--exec-id", fmt.Sprintf("floor-%d", i), id, "echo", "hi").CombinedOutput()
			if err != nil || string(out) != "hi\n" {
				b.Fatalf("ctr task exec: %v: %s", err, out)
			}
			floor = append(floor, time.Since(start))
		}
		f50, f99 := percentiles(floor)
		b.ReportMetric(f50.Seconds()*1000, "ms-p50-ctr-exec")
		b.ReportMetric(f99.Seconds()*1000, "ms-p99-ctr-exec")
	}
}
