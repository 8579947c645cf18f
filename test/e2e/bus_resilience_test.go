package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/test/harness"
)

// natsConn connects to the server's bus with the rights to delete and
// change streams (the publisher's identity). It is the only place these
// tests dial NATS.
func natsConn(t *testing.T, s *harness.Server) jetstream.JetStream {
	t.Helper()
	nc, js := s.BusConnect(t, busauth.PublisherUser)
	t.Cleanup(nc.Close)
	return js
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	lbls := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			},
		},
	}
}

// boundPods waits until app has exactly n pods that are not being deleted,
// all bound to a node (pods being deleted stay: no kubelet confirms it).
func boundPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, app string, n int) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return err
		}
		live, bound := 0, 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if live != n || bound != n {
			return fmt.Errorf("%s has %d pods not being deleted, %d bound; want %d bound", app, live, bound, n)
		}
		return nil
	})
}

// TestIntegrationBusStoreLoss: every stream is deleted under a running
// `kubebus server`. Within 30s the streams are back and the components'
// caches match etcd again: a new Deployment gets its pods created and
// scheduled, and scaling down an old one deletes exactly the surplus (a
// controller that lost its cache would create pods instead).
func TestIntegrationBusStoreLoss(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", noServiceAccounts)
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	schedNode(ctx, t, cs, "loss-node", "16", nil)
	const ns = "default"
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("before", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	boundPods(ctx, t, cs, ns, "before", 3)

	js := natsConn(t, s)
	for _, name := range bus.StreamNames {
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
	harness.Eventually(t, 30*time.Second, func() error {
		for _, name := range bus.StreamNames {
			if _, err := js.Stream(ctx, name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})

	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("after", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	boundPods(ctx, t, cs, ns, "after", 2)
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	d.Spec.Replicas = &one
	if _, err := cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	boundPods(ctx, t, cs, ns, "before", 1)
	if !strings.Contains(s.Logs(), "reseeding the state stream from etcd") {
		t.Errorf("the publisher did not log reseeding the streams")
	}
}

// TestIntegrationBusStoreFull: the bus's store, a small tmpfs under NATS's
// data, fills up with big ConfigMaps (the streams' byte limits are far
// larger: the disk, not a limit, runs out, and NATS turns JetStream off).
// The API keeps accepting writes (etcd holds them); /readyz fails naming
// the cause once the publisher has been stuck for the stall window; every
// write that got a 2xx is readable; once the disk has room again (the
// tmpfs grows) NATS's JetStream comes back, the bus catches up with every
// object and /readyz passes.
func TestIntegrationBusStoreFull(t *testing.T) {
	harness.SkipShort(t)
	if os.Geteuid() != 0 {
		if os.Getenv("KUBEBUS_REQUIRE_PREREQS") == "1" {
			t.Fatal("mounting a tmpfs needs root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "nats")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", store).CombinedOutput(); err != nil {
		t.Fatalf("mounting a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", store).CombinedOutput(); err != nil {
			t.Errorf("unmounting the tmpfs: %v: %s", err, out)
		}
	})
	s := harness.StartServer(t, dir, append(apiOnly, "--bus-history-max-bytes", fmt.Sprint(64<<20),
		"--nats-max-store", fmt.Sprint(1<<30), "--bus-publisher-stall-window", "5s")...)
	t.Cleanup(func() { s.Stop(t) }) // runs before the unmount
	cs := s.Clientset(t)
	hc := s.HTTPClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "default"
	big := strings.Repeat("x", 100<<10)
	var created []string
	readyz := func() (int, string) {
		resp, err := hc.Get(s.URL + "/readyz?verbose")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Fill: 200 objects of 100 KiB, each on two streams, do not fit 16 MiB.
	for i := range 200 {
		name := fmt.Sprintf("big-%03d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"blob": big}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s while the bus is full: %v", name, err)
		}
		created = append(created, name)
	}
	var body string
	harness.Eventually(t, 90*time.Second, func() error {
		code, b := readyz()
		body = b
		if code == 200 {
			return errors.New("/readyz still passes")
		}
		if !strings.Contains(b, "bus publisher is") || !strings.Contains(b, "no space left on device") {
			return fmt.Errorf("/readyz fails without naming the bus store: %d %s", code, b)
		}
		return nil
	})
	t.Logf("/readyz while full:\n%s", body)
	for _, name := range created {
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s was created (2xx) but cannot be read: %v", name, err)
		}
	}

	// Room again.
	if out, err := exec.Command("mount", "-o", "remount,size=256m", store).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v: %s", err, out)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-full"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	js := natsConn(t, s)
	subj := bus.StateSubject(bus.ObjectKey{Resource: "configmaps", Namespace: ns, Name: "after-full"})
	var st jetstream.Stream
	harness.Eventually(t, 90*time.Second, func() error {
		// Each attempt has its own deadline: a JetStream API request
		// that arrives while the server restarts JetStream (as it does
		// once the disk has room) can go unanswered, and would otherwise
		// hold the test until ctx expires.
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if st, err = js.Stream(actx, bus.StateStream); err != nil {
			return err
		}
		if _, err := st.GetLastMsgForSubject(actx, subj); err != nil {
			return fmt.Errorf("after-full on the bus: %w", err)
		}
		if code, b := readyz(); code != 200 {
			return fmt.Errorf("/readyz: %d %s", code, b)
		}
		return nil
	})
	for _, name := range created {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := st.GetLastMsgForSubject(actx, bus.StateSubject(bus.ObjectKey{Resource: "configmaps", Namespace: ns, Name: name}))
		cancel()
		if err != nil {
			t.Errorf("%s is not on the bus after it caught up: %v", name, err)
		}
	}
}
