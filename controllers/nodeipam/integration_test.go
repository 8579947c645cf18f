package nodeipam_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/nodeipam"
	"github.com/kubebus/kubebus/test/harness"
)

func TestIntegrationNodeIPAM(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	cs := s.Clientset(t)
	ctx := context.Background()

	// A node that already has a subnet keeps it, and nobody else gets it.
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "preset"},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	_, js := s.BusConnect(t, "system:kube-controller-manager")
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	inf, err := cache.New(cache.Config{JetStream: js, Component: "nodeipam-test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := nodeipam.New(nodeipam.Config{Client: cs, Nodes: inf.Nodes, Options: controllers.Options{Logger: log, Workers: 4}})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: log}
	m.AddCache(inf)
	m.Add(ctrl)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i)}}, metav1.CreateOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	cluster := netip.MustParsePrefix(nodeipam.DefaultClusterCIDR)
	var assigned map[string]string
	harness.Eventually(t, 30*time.Second, func() error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		assigned = map[string]string{}
		owner := map[string]string{}
		for _, node := range nodes.Items {
			if node.Spec.PodCIDR == "" {
				return fmt.Errorf("node %s has no podCIDR yet", node.Name)
			}
			if len(node.Spec.PodCIDRs) != 1 || node.Spec.PodCIDRs[0] != node.Spec.PodCIDR {
				return fmt.Errorf("node %s: podCIDRs %v do not match podCIDR %s", node.Name, node.Spec.PodCIDRs, node.Spec.PodCIDR)
			}
			p, err := netip.ParsePrefix(node.Spec.PodCIDR)
			if err != nil || p.Bits() != 24 || !cluster.Contains(p.Addr()) {
				return fmt.Errorf("node %s: podCIDR %s is not a /24 of %s", node.Name, node.Spec.PodCIDR, cluster)
			}
			if other, dup := owner[node.Spec.PodCIDR]; dup {
				t.Fatalf("nodes %s and %s share %s", other, node.Name, node.Spec.PodCIDR)
			}
			owner[node.Spec.PodCIDR] = node.Name
			assigned[node.Name] = node.Spec.PodCIDR
		}
		if len(assigned) != n+1 {
			return fmt.Errorf("%d nodes, want %d", len(assigned), n+1)
		}
		return nil
	})
	if assigned["preset"] != "10.244.0.0/24" {
		t.Fatalf("the preset node's subnet changed to %s", assigned["preset"])
	}

	// A deleted node's subnet can go to a new node; the others never change.
	if err := cs.CoreV1().Nodes().Delete(ctx, "node-00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 20*time.Second, func() error {
		late, err := cs.CoreV1().Nodes().Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if late.Spec.PodCIDR == "" {
			return fmt.Errorf("late has no podCIDR yet")
		}
		for name, cidr := range assigned {
			if name != "node-00" && cidr == late.Spec.PodCIDR {
				t.Fatalf("late got %s, which %s holds", cidr, name)
			}
		}
		return nil
	})
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes.Items {
		if want, ok := assigned[node.Name]; ok && node.Spec.PodCIDR != want {
			t.Errorf("node %s: podCIDR changed from %s to %s", node.Name, want, node.Spec.PodCIDR)
		}
	}
}
