package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/test/harness/ociimage"
	"github.com/kubebus/kubebus/test/prereq"
)

// NodeNetNS creates a network namespace for a node's pod network (its
// bridge, the pod CIDR's gateway, the CNI plugins' and the proxy's packet
// rules), with loopback up and a default route, and deletes it when the
// test ends. It returns its path.
func NodeNetNS(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "creating network namespaces needs root")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "kbt-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Logf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	// Loopback, and an uplink standing in for the node's network: a veth
	// pair inside the namespace with a default route, so that connections
	// to Service addresses get routed (and then DNATed by the proxy).
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "kbup0", "type", "veth", "peer", "name", "kbup1"},
		{"link", "set", "kbup0", "up"},
		{"link", "set", "kbup1", "up"},
		{"addr", "add", "198.18.0.2/24", "dev", "kbup0"},
		{"route", "add", "default", "via", "198.18.0.1", "dev", "kbup0"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s %v: %v: %s", name, args, err, out)
		}
	}
	return filepath.Join("/run/netns", name)
}

// BusyboxTar writes the busybox image (Debian's static busybox) as a
// docker archive and returns its path.
func BusyboxTar(t testing.TB) string {
	t.Helper()
	b, err := ociimage.BusyboxArchive()
	if err != nil {
		t.Fatalf("building the busybox image: %v", err)
	}
	p := filepath.Join(t.TempDir(), "busybox.tar")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Node is the all-in-one server's local node.
type Node struct {
	Name  string
	NetNS string // the node network namespace's path
	// RootDir is the kubelet's root dir (containerd, pod volumes, logs).
	RootDir string
}

// StartServerWithNode starts `kubebus server` with its local node (a real
// kubelet with its own containerd) whose pod network lives in a network
// namespace of the test's, waits for the node to be Ready and imports the
// busybox image into its containerd.
func StartServerWithNode(t testing.TB, extraArgs ...string) (*Server, *Node) {
	t.Helper()
	SkipShort(t)
	ns := NodeNetNS(t)
	// Short: containerd's socket path must fit in a unix socket address.
	dir, err := os.MkdirTemp("", "kbn-")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Name: "node-" + filepath.Base(ns)[4:], NetNS: ns, RootDir: filepath.Join(dir, "kubelet")}
	// Cleanups run last first: the pods go, then the server, then what is
	// left of the node.
	t.Cleanup(func() { CleanupNodeDir(t, dir) })
	args := append([]string{"--disable-kubelet=false", "--node-netns", ns, "--port", "0", "--hostname-override", n.Name}, extraArgs...)
	s := StartServer(t, dir, args...)
	t.Cleanup(func() { DeleteAllPods(t, s, time.Minute) })
	WaitNodeReady(t, s, n.Name, 90*time.Second)
	ImportImage(t, n.RootDir, BusyboxTar(t))
	return s, n
}

// DeleteAllPods deletes every pod and waits until the kubelets removed
// their containers and the pods are gone.
func DeleteAllPods(t testing.TB, s *Server, timeout time.Duration) {
	t.Helper()
	cs := s.Clientset(t)
	ctx := context.Background()
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("cleanup: listing namespaces: %v", err)
		return
	}
	for _, ns := range nss.Items {
		// Owners first, or they would make new pods.
		_ = cs.AppsV1().Deployments(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = cs.AppsV1().ReplicaSets(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err := cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Logf("cleanup: deleting the pods of %s: %v", ns.Name, err)
		}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		left := 0
		if err == nil {
			for _, p := range pods.Items {
				if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
					left++
				}
			}
		}
		if err == nil && left == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("cleanup: pods still there after %v", timeout)
}

// CleanupNodeDir kills what a stopped node left running (container shims
// whose command line names its directory) and removes the directory.
func CleanupNodeDir(t testing.TB, dir string) {
	if out, err := exec.Command("pkill", "-9", "-f", dir+"/").CombinedOutput(); err == nil {
		t.Logf("cleanup: killed processes left under %s: %s", dir, out)
		time.Sleep(200 * time.Millisecond)
	}
	_ = exec.Command("sh", "-c", "grep -o ' "+dir+"/[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l").Run()
	if err := os.RemoveAll(dir); err != nil {
		t.Logf("cleanup: removing %s: %v", dir, err)
	}
}

// WaitNodeReady waits until the node is Ready.
func WaitNodeReady(t testing.TB, s *Server, name string, timeout time.Duration) {
	t.Helper()
	cs := s.Clientset(t)
	Eventually(t, timeout, func() error {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s Ready=%s: %s", name, c.Status, c.Message)
			}
		}
		return fmt.Errorf("node %s has no Ready condition", name)
	})
}

// ImportImage runs `kubebus image import` into the kubelet's containerd.
func ImportImage(t testing.TB, rootDir, tarball string) {
	t.Helper()
	out, err := exec.Command(Binary(t), "image", "import", "--root-dir", rootDir, tarball).CombinedOutput()
	if err != nil {
		t.Fatalf("kubebus image import: %v: %s", err, out)
	}
}

// HTTPGetInNetNS fetches url from inside a network namespace (where the
// pod network is reachable).
func HTTPGetInNetNS(netns, url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: cni.Dialer(netns), DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}
