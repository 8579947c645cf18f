package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

const httpdDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: httpd
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && echo serving as $(hostname) && exec httpd -f -p 8080 -h /www"]
        ports:
        - containerPort: 8080
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
`

// podsOf lists the pods with a label selector.
func podsOf(t *testing.T, cs kubernetes.Interface, ns, selector string) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestIntegrationKubeletRunsPods: the all-in-one's own node runs real
// containers (containerd, runc, CNI bridge in a network namespace of the
// test's): a Deployment of three busybox httpd pods serves HTTP on distinct
// pod IPs, kubectl logs shows their output, a deleted pod is replaced.
func TestIntegrationKubeletRunsPods(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	kubectl := harness.Kubectl(t)
	s.MustRun(t, kubectl, httpdDeployment, "apply", "-f", "-")

	var pods []corev1.Pod
	harness.Eventually(t, 90*time.Second, func() error {
		pods = podsOf(t, cs, "default", "app=web")
		running := 0
		for i := range pods {
			if pods[i].Status.Phase == corev1.PodRunning && ready(&pods[i]) {
				running++
			}
		}
		if running != 3 || len(pods) != 3 {
			return fmt.Errorf("%d of %d pods Running and Ready", running, len(pods))
		}
		return nil
	})
	ips := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName != node.Name || p.Status.PodIP == "" || p.Status.HostIP != "127.0.0.1" {
			t.Fatalf("pod %s: node %q podIP %q hostIP %q", p.Name, p.Spec.NodeName, p.Status.PodIP, p.Status.HostIP)
		}
		if other, dup := ips[p.Status.PodIP]; dup {
			t.Fatalf("pods %s and %s share IP %s", p.Name, other, p.Status.PodIP)
		}
		ips[p.Status.PodIP] = p.Name
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || !cs[0].Ready || cs[0].State.Running == nil || !strings.HasPrefix(cs[0].ContainerID, "containerd://") || cs[0].ImageID == "" {
			t.Fatalf("pod %s container status %+v", p.Name, cs)
		}
		body, err := harness.HTTPGetInNetNS(node.NetNS, "http://"+p.Status.PodIP+":8080/")
		if err != nil {
			t.Fatalf("GET pod %s: %v", p.Name, err)
		}
		if strings.TrimSpace(body) != p.Name {
			t.Fatalf("pod %s at %s answered %q", p.Name, p.Status.PodIP, body)
		}
		logs := s.MustRun(t, kubectl, "", "logs", p.Name)
		if strings.TrimSpace(logs) != "serving as "+p.Name {
			t.Fatalf("kubectl logs %s = %q", p.Name, logs)
		}
	}

	// A Service in front of them: the local node's proxy programs the node
	// namespace's nftables, and its ClusterIP reaches more than one pod.
	s.MustRun(t, kubectl, "", "expose", "deployment", "web", "--port=80", "--target-port=8080")
	svc, err := cs.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	harness.Eventually(t, 60*time.Second, func() error {
		body, err := harness.HTTPGetInNetNS(node.NetNS, "http://"+svc.Spec.ClusterIP+"/")
		if err != nil {
			return err
		}
		name := strings.TrimSpace(body)
		if _, ok := ips[podIPOf(pods, name)]; !ok {
			t.Fatalf("the ClusterIP answered %q, not one of the pods", body)
		}
		answered[name] = true
		if len(answered) < 2 {
			return fmt.Errorf("the ClusterIP reached %v so far", answered)
		}
		return nil
	})

	// A deleted pod's container stops and the ReplicaSet's replacement runs.
	victim := pods[0]
	s.MustRun(t, kubectl, "", "delete", "pod", victim.Name, "--wait=true", "--timeout=60s")
	if _, err := harness.HTTPGetInNetNS(node.NetNS, "http://"+victim.Status.PodIP+":8080/"); err == nil {
		t.Fatalf("the deleted pod %s still answers at %s", victim.Name, victim.Status.PodIP)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		pods = podsOf(t, cs, "default", "app=web")
		running := 0
		for i := range pods {
			if pods[i].UID == victim.UID {
				return fmt.Errorf("the deleted pod is still listed")
			}
			if pods[i].Status.Phase == corev1.PodRunning && ready(&pods[i]) {
				running++
			}
		}
		if running != 3 {
			return fmt.Errorf("%d of 3 Running", running)
		}
		return nil
	})
}

// podIPOf returns the IP of the named pod ("" if none).
func podIPOf(pods []corev1.Pod, name string) string {
	for _, p := range pods {
		if p.Name == name {
			return p.Status.PodIP
		}
	}
	return ""
}

const probesPod = `apiVersion: v1
kind: Pod
metadata:
  name: probes
spec:
  initContainers:
  - name: init
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo from-init > /work/greeting"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: live
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    # Healthy for 3s after each start, then the liveness probe fails.
    command: ["sh", "-c", "cat /work/greeting; touch /tmp/healthy; sleep 3; rm /tmp/healthy; sleep 3600"]
    volumeMounts: [{name: work, mountPath: /work}]
    livenessProbe:
      exec: {command: ["cat", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 1
  - name: ready
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    # Ready while /tmp/ready exists: for the first 4s.
    command: ["sh", "-c", "touch /tmp/ready; sleep 4; rm /tmp/ready; sleep 3600"]
    readinessProbe:
      exec: {command: ["cat", "/tmp/ready"]}
      periodSeconds: 1
  - name: crash
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo crashing; exit 3"]
  volumes:
  - name: work
    emptyDir: {}
`

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// TestIntegrationKubeletProbesInitCrashLoop: an init container runs before
// the main ones; a failing liveness probe restarts its container; a failing
// readiness probe clears Ready; a crashing container reaches
// CrashLoopBackOff with growing delays between its restarts.
func TestIntegrationKubeletProbesInitCrashLoop(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	kubectl := harness.Kubectl(t)
	s.MustRun(t, kubectl, probesPod, "apply", "-f", "-")
	get := func() *corev1.Pod {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "probes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The init container completed before the main containers started.
	harness.Eventually(t, 60*time.Second, func() error {
		p := get()
		init, live := containerStatus(p, "init"), containerStatus(p, "live")
		if init == nil || init.State.Terminated == nil || live == nil || (live.State.Running == nil && live.LastTerminationState.Terminated == nil) {
			return fmt.Errorf("init %+v live %+v", init, live)
		}
		if init.State.Terminated.ExitCode != 0 || init.State.Terminated.Reason != "Completed" {
			t.Fatalf("init container terminated %+v", init.State.Terminated)
		}
		started := live.State.Running
		if started == nil {
			return fmt.Errorf("live not running")
		}
		if started.StartedAt.Before(&init.State.Terminated.FinishedAt) {
			t.Fatalf("live started %v before init finished %v", started.StartedAt, init.State.Terminated.FinishedAt)
		}
		return nil
	})
	if out := s.MustRun(t, kubectl, "", "logs", "probes", "-c", "live"); !strings.Contains(out, "from-init") {
		t.Fatalf("live's log %q lacks what init wrote", out)
	}
	// The readiness probe: ready first, then not.
	sawReady := false
	harness.Eventually(t, 60*time.Second, func() error {
		st := containerStatus(get(), "ready")
		if st != nil && st.Ready {
			sawReady = true
		}
		if !sawReady || st.Ready {
			return fmt.Errorf("ready container: seen ready %v, ready now %v", sawReady, st != nil && st.Ready)
		}
		return nil
	})
	p := get()
	if ready(p) {
		t.Fatal("the pod is Ready while a container is not")
	}
	// Liveness restarts "live" (every ~4s); "crash" backs off 10s, 20s...
	harness.Eventually(t, 90*time.Second, func() error {
		p := get()
		live, crash := containerStatus(p, "live"), containerStatus(p, "crash")
		if live.RestartCount < 2 {
			return fmt.Errorf("live restarted %d times", live.RestartCount)
		}
		if crash.RestartCount < 2 || crash.State.Waiting == nil || crash.State.Waiting.Reason != "CrashLoopBackOff" {
			return fmt.Errorf("crash: restarts %d state %+v", crash.RestartCount, crash.State)
		}
		return nil
	})
	if out, err := s.Run(t, kubectl, "", "logs", "probes", "-c", "crash", "--previous"); err != nil || strings.TrimSpace(out) != "crashing" {
		t.Fatalf("kubectl logs --previous: %q %v", out, err)
	}
	// Growing delays: the kubelet's BackOff events carry the back-off.
	evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=probes"})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs.Items {
		reasons = append(reasons, e.Reason)
	}
	joined := strings.Join(reasons, ",")
	for _, want := range []string{"Created", "Started", "Killing", "Unhealthy"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %s event among %s", want, joined)
		}
	}
}

// TestIntegrationKubeletCrashLoopDelaysGrow: a crashing container is
// restarted at once, then 10s, then 20s later (upstream's back-off).
func TestIntegrationKubeletCrashLoopDelaysGrow(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crasher"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", "exit 1"},
	}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Record when each attempt started, by its number: a terminated state
	// is attempt restartCount, a last termination state (while waiting) too.
	starts := map[int32]time.Time{}
	deadline := time.Now().Add(100 * time.Second)
	for (starts[1].IsZero() || starts[2].IsZero() || starts[3].IsZero()) && time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "crasher", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := containerStatus(p, "c"); st != nil {
			switch {
			case st.State.Terminated != nil:
				starts[st.RestartCount] = st.State.Terminated.StartedAt.Time
			case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
				starts[st.RestartCount] = st.LastTerminationState.Terminated.StartedAt.Time
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if starts[1].IsZero() || starts[2].IsZero() || starts[3].IsZero() {
		t.Fatalf("saw starts of attempts %v in 100s", starts)
	}
	// As upstream: the first restart comes at once, then the back-off
	// starts at 10s and doubles.
	d2, d3 := starts[2].Sub(starts[1]), starts[3].Sub(starts[2])
	t.Logf("delays before attempts 2 and 3: %v, %v", d2, d3)
	if d2 < 9*time.Second || d3 < 19*time.Second {
		t.Fatalf("back-off delays %v, %v; want about 10s, 20s", d2, d3)
	}
	if !starts[0].IsZero() {
		if d1 := starts[1].Sub(starts[0]); d1 > 5*time.Second {
			t.Fatalf("the first restart came %v after the first start; want at once", d1)
		}
	}
}

// TestIntegrationKubeletStaticPod: a manifest in the node's manifest
// directory runs without the API and shows as a mirror pod.
func TestIntegrationKubeletStaticPod(t *testing.T) {
	manifests := t.TempDir()
	s, node := harness.StartServerWithNode(t, "--pod-manifest-path", manifests)
	cs := s.Clientset(t)
	ctx := context.Background()
	const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: kube-system
spec:
  containers:
  - name: web
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo static > /www/index.html && exec httpd -f -p 8080 -h /www"]
`
	if err := os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "static-web-" + node.Name
	harness.Eventually(t, 60*time.Second, func() error {
		out := s.MustRun(t, harness.Kubectl(t), "", "get", "pods", "-A")
		if !strings.Contains(out, name) || !strings.Contains(out, "Running") {
			return fmt.Errorf("kubectl get pods -A:\n%s", out)
		}
		return nil
	})
	p, err := cs.CoreV1().Pods("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Annotations[corev1.MirrorPodAnnotationKey] == "" || len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("mirror pod annotations %v owners %v", p.Annotations, p.OwnerReferences)
	}
	if body, err := harness.HTTPGetInNetNS(node.NetNS, "http://"+p.Status.PodIP+":8080/"); err != nil {
		t.Fatalf("the static pod does not serve: %v (%q)", err, body)
	}
	// Deleting the mirror pod does not stop the static pod: it comes back.
	if err := cs.CoreV1().Pods("kube-system").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		m, err := cs.CoreV1().Pods("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if m.UID == p.UID {
			return fmt.Errorf("still the old mirror")
		}
		return nil
	})
	// Removing the manifest stops it and removes the mirror.
	if err := os.Remove(filepath.Join(manifests, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		_, err := cs.CoreV1().Pods("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("the mirror pod is still there")
		}
		if _, err := harness.HTTPGetInNetNS(node.NetNS, "http://"+p.Status.PodIP+":8080/"); err == nil {
			return fmt.Errorf("the static pod still serves")
		}
		return nil
	})
}

// TestIntegrationKubeletRestartAdopts: a kubelet killed with SIGKILL leaves
// its containers running; restarted, it adopts them: same container IDs,
// restart counts unchanged, still serving.
func TestIntegrationKubeletRestartAdopts(t *testing.T) {
	harness.SkipShort(t)
	ns := harness.NodeNetNS(t)
	s := harness.StartServer(t, "")
	dir, err := os.MkdirTemp("", "kbk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { harness.CleanupNodeDir(t, dir) })
	root := filepath.Join(dir, "kubelet")
	name := "node-restart"
	// The kubelet runs as its node (its serving certificate comes through
	// a CSR the controller-manager approves for that node only).
	kubelet := harness.StartProcess(t, "kubelet", "--kubeconfig", harness.NodeKubeconfig(t, s, name), "--nats-url", s.BusURL(t), "--root-dir", root,
		"--hostname-override", name, "--node-netns", ns, "--port", "0",
		"--client-ca-file", filepath.Join(s.Dir, "pki", "ca.crt"), "--instance", name)
	harness.WaitNodeReady(t, s, name, 90*time.Second)
	harness.ImportImage(t, root, harness.BusyboxTar(t))
	t.Cleanup(func() { harness.DeleteAllPods(t, s, time.Minute) })
	cs := s.Clientset(t)
	s.MustRun(t, harness.Kubectl(t), httpdDeployment, "apply", "-f", "-")
	var before []corev1.Pod
	harness.Eventually(t, 90*time.Second, func() error {
		before = podsOf(t, cs, "default", "app=web")
		n := 0
		for i := range before {
			if ready(&before[i]) {
				n++
			}
		}
		if n != 3 {
			return fmt.Errorf("%d of 3 ready", n)
		}
		return nil
	})
	kubelet.Kill()
	// The containers outlive the kubelet.
	for _, p := range before {
		if _, err := harness.HTTPGetInNetNS(ns, "http://"+p.Status.PodIP+":8080/"); err != nil {
			t.Fatalf("pod %s stopped serving when the kubelet died: %v", p.Name, err)
		}
	}
	kubelet.Start(t)
	// Give the restarted kubelet time to sync every pod, then compare.
	time.Sleep(5 * time.Second)
	harness.WaitNodeReady(t, s, name, 60*time.Second)
	after := podsOf(t, cs, "default", "app=web")
	if len(after) != 3 {
		t.Fatalf("%d pods after the restart", len(after))
	}
	byName := map[string]corev1.Pod{}
	for _, p := range before {
		byName[p.Name] = p
	}
	for _, p := range after {
		old, ok := byName[p.Name]
		if !ok {
			t.Fatalf("pod %s is new after the restart", p.Name)
		}
		a, b := p.Status.ContainerStatuses[0], old.Status.ContainerStatuses[0]
		if a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount || !a.Ready || p.Status.PodIP != old.Status.PodIP {
			t.Fatalf("pod %s: before %s restarts %d ip %s; after %s restarts %d ready %v ip %s", p.Name,
				b.ContainerID, b.RestartCount, old.Status.PodIP, a.ContainerID, a.RestartCount, a.Ready, p.Status.PodIP)
		}
		if _, err := harness.HTTPGetInNetNS(ns, "http://"+p.Status.PodIP+":8080/"); err != nil {
			t.Fatalf("pod %s does not serve after the restart: %v", p.Name, err)
		}
	}
}

// TestIntegrationKubeletHooksAndGracefulStop: postStart runs after the
// container starts; on delete, preStop runs, then the container gets
// SIGTERM and may finish, and the pod object goes away once it stopped.
func TestIntegrationKubeletHooksAndGracefulStop(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	hooks := t.TempDir()
	hostPath := corev1.HostPathDirectory
	grace := int64(10)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Volumes:                       []corev1.Volume{{Name: "hooks", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hooks, Type: &hostPath}}}},
		Containers: []corev1.Container{{
			Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			Command:      []string{"sh", "-c", "trap 'echo term > /hooks/term; exit 0' TERM; while true; do sleep 0.2; done"},
			VolumeMounts: []corev1.VolumeMount{{Name: "hooks", MountPath: "/hooks"}},
			Lifecycle: &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo started > /hooks/poststart"}}},
				PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopping > /hooks/prestop"}}},
			},
		}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "hooks", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		if _, err := os.Stat(filepath.Join(hooks, "poststart")); err != nil {
			return fmt.Errorf("postStart hook: %v", err)
		}
		return nil
	})
	for _, f := range []string{"prestop", "term"} {
		if _, err := os.Stat(filepath.Join(hooks, f)); err == nil {
			t.Fatalf("%s written before the pod was deleted", f)
		}
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "hooks", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		if _, err := cs.CoreV1().Pods("default").Get(ctx, "hooks", metav1.GetOptions{}); err == nil {
			return fmt.Errorf("the pod is still there")
		}
		return nil
	})
	for _, f := range []string{"poststart", "prestop", "term"} {
		b, err := os.ReadFile(filepath.Join(hooks, f))
		if err != nil {
			t.Fatalf("after the delete: %v", err)
		}
		t.Logf("%s: %s", f, strings.TrimSpace(string(b)))
	}
}
