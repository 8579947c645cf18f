package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for err := cond(); err != nil; err = cond() {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		<-time.After(5 * time.Millisecond)
	}
}

func TestAgent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	a := &Agent{Config: testConfig(t), Client: client, Clock: clk}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	renewed := func(at time.Time) func() error {
		return func() error {
			l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !l.Spec.RenewTime.Time.Equal(at) {
				return fmt.Errorf("lease renewed at %v, want %v", l.Spec.RenewTime.Time, at)
			}
			return nil
		}
	}
	eventually(t, renewed(t0))
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(n.Status, corev1.NodeReady); c.Status != corev1.ConditionTrue || !c.LastHeartbeatTime.Time.Equal(t0) {
		t.Fatalf("Ready = %+v", c)
	}
	eventually(t, func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("the agent is not waiting on its tickers")
		}
		return nil
	})
	// The control plane assigns a podCIDR; the agent sees it on its next status tick.
	n.Spec.PodCIDR = "10.244.5.0/24"
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		clk.Step(10 * time.Second)
		eventually(t, renewed(t0.Add(time.Duration(i)*10*time.Second)))
	}
	eventually(t, func() error {
		if got := a.Node().Spec.PodCIDR; got != "10.244.5.0/24" {
			return fmt.Errorf("the agent's node has podCIDR %q", got)
		}
		return nil
	})
	eventually(t, func() error { // a heartbeat a minute after the first post
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hb := cond(n.Status, corev1.NodeReady).LastHeartbeatTime.Time; !hb.Equal(t0.Add(time.Minute)) {
			return fmt.Errorf("last heartbeat %v", hb)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAgentPokePostsStatusAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var ready atomic.Bool
	a := &Agent{Config: testConfig(t), Client: client, Clock: clk, Health: func() Health {
		if ready.Load() {
			return Health{}
		}
		return Health{NotReady: "PLEG is not healthy: pod sources not synced yet"}
	}}
	go func() { _ = a.Run(ctx) }()
	readyIs := func(want corev1.ConditionStatus) func() error {
		return func() error {
			n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if c := cond(n.Status, corev1.NodeReady); c.Status != want {
				return fmt.Errorf("Ready = %s (%s), want %s", c.Status, c.Message, want)
			}
			return nil
		}
	}
	eventually(t, readyIs(corev1.ConditionFalse))
	// No tick comes (the fake clock stands still): only the poke posts.
	ready.Store(true)
	a.Poke()
	eventually(t, readyIs(corev1.ConditionTrue))
}
