//go:build compose

package compose

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness/ociimage"
)

// TestIntegrationCompose brings the stack up from nothing, runs the seed
// story and the chaos sequence on it, and tears it down.
func TestIntegrationCompose(t *testing.T) {
	s := StartStack(t)
	importBusybox(t, s)
	t.Run("SeedStory", func(t *testing.T) { seedStory(t, s) })
	if t.Failed() {
		return
	}
	t.Run("KubectlScenarios", func(t *testing.T) { kubectlScenarios(t, s) })
	t.Run("Chaos", func(t *testing.T) { chaos(t, s) })
}

// kubectlScenarios runs the everyday kubectl commands of test/e2e
// (TestIntegrationKubectl, the stock kubectl and kubectl 1.32) against the
// stack's load balancer, as a `go test` of that package pointed at the
// stack's kubeconfig.
func kubectlScenarios(t *testing.T, s *Stack) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestIntegrationKubectl$", "./test/e2e/")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBEBUS_E2E_KUBECONFIG="+s.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the kubectl scenarios against the load balancer: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// importBusybox imports the busybox image as busybox:latest and, with one
// more variable in its configuration (so another image ID), busybox:v2.
func importBusybox(t *testing.T, s *Stack) {
	t.Helper()
	dir := t.TempDir()
	img, err := ociimage.BusyboxImage()
	if err != nil {
		t.Fatalf("the busybox image: %v", err)
	}
	for _, tag := range []string{"latest", "v2"} {
		img.RepoTags = []string{"busybox:" + tag}
		if tag == "v2" {
			img.Config.Env = append(img.Config.Env, "BUSYBOX_IMAGE=v2")
		}
		f, err := os.Create(filepath.Join(dir, tag+".tar"))
		if err != nil {
			t.Fatal(err)
		}
		if err := ociimage.WriteDockerArchive(f, img); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		s.ImportImage(t, f.Name())
	}
}

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: seed
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 2
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: web}
      containers:
      - name: web
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && echo serving $(hostname) && exec httpd -f -p 8080 -h /www"]
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: seed
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`

// clientManifest is a pod pinned to a node, from which the Service is
// asked.
func clientManifest(node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: client-%[1]s
  namespace: seed
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, node)
}

// seedStory: a Deployment of 4 spread over both nodes, its Service
// answering on the ClusterIP from a pod on either node with backends on
// both, kubectl logs through the load balancer, and a rollout of a new
// image.
func seedStory(t *testing.T, s *Stack) {
	ctx := context.Background()
	cs := s.Clientset(t)
	s.MustKubectl(t, "", "create", "namespace", "seed")
	s.MustKubectl(t, webManifest+"---\n"+clientManifest("node-0")+"---\n"+clientManifest("node-1"), "apply", "-f", "-")
	s.MustKubectl(t, "", "-n", "seed", "rollout", "status", "deployment/web", "--timeout=180s")
	s.MustKubectl(t, "", "-n", "seed", "wait", "--for=condition=Ready", "pod/client-node-0", "pod/client-node-1", "--timeout=120s")

	// Spread: two pods on each node.
	webPods := func() map[string]string { // pod name -> node
		pods, err := cs.CoreV1().Pods("seed").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				m[p.Name] = p.Spec.NodeName
			}
		}
		return m
	}
	perNode := map[string]int{}
	pods := webPods()
	for _, n := range pods {
		perNode[n]++
	}
	if perNode["node-0"] != 2 || perNode["node-1"] != 2 {
		t.Fatalf("web's pods per node = %v, want 2 on each of node-0 and node-1 (topology spread)", perNode)
	}

	serviceReachesBothNodes(t, s)

	// kubectl logs through the load balancer, from a pod on each node.
	for name, node := range pods {
		out := s.MustKubectl(t, "", "-n", "seed", "logs", name)
		if !strings.Contains(out, "serving "+name) {
			t.Errorf("kubectl logs %s (on %s) = %q, want the line the pod printed", name, node, out)
		}
	}

	// A rollout of a new image: busybox:latest -> busybox:v2 (another image
	// ID, imported into both nodes).
	s.MustKubectl(t, "", "-n", "seed", "set", "image", "deployment/web", "web=busybox:v2")
	s.MustKubectl(t, "", "-n", "seed", "rollout", "status", "deployment/web", "--timeout=180s")
	hist := s.MustKubectl(t, "", "-n", "seed", "rollout", "history", "deployment/web")
	if !strings.Contains(hist, "2") {
		t.Errorf("rollout history = %q, want revision 2", hist)
	}
	after := webPods()
	if len(after) != 4 {
		t.Errorf("after the rollout web has %d pods, want 4", len(after))
	}
	all, err := cs.CoreV1().Pods("seed").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != "busybox:v2" {
			t.Errorf("pod %s still runs %s after the rollout", p.Name, p.Spec.Containers[0].Image)
		}
	}
	// The new pods serve through the Service too.
	serviceReachesBothNodes(t, s)
}

// serviceReachesBothNodes asks seed/web's ClusterIP from the client pod on
// each node until answers came from backends on both nodes (each backend
// answers with its pod name).
func serviceReachesBothNodes(t *testing.T, s *Stack) {
	t.Helper()
	ctx := context.Background()
	cs := s.Clientset(t)
	svc, err := cs.CoreV1().Services("seed").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := svc.Spec.ClusterIP
	for _, from := range []string{"node-0", "node-1"} {
		seen := map[string]bool{}
		eventually(t, 90*time.Second, "the Service from a pod on "+from+" reaching backends on both nodes", func() error {
			pods, err := cs.CoreV1().Pods("seed").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return err
			}
			node := map[string]string{}
			for _, p := range pods.Items {
				node[p.Name] = p.Spec.NodeName
			}
			out, err := s.Kubectl(t, "", "-n", "seed", "exec", "client-"+from, "--",
				"sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s 80`, ip))
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			name := strings.TrimSpace(lines[len(lines)-1])
			n, ok := node[name]
			if !ok {
				return fmt.Errorf("answer %q names no web pod", out)
			}
			seen[n] = true
			if !seen["node-0"] || !seen["node-1"] {
				return fmt.Errorf("backends answered only from %v", seen)
			}
			return nil
		})
	}
}
