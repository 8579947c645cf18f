package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Agent registers one node, renews its lease and posts its status.
type Agent struct {
	Config Config
	Client kubernetes.Interface
	// Health reports the node's health (default: healthy).
	Health func() Health
	// LeaseInterval (10s) and StatusInterval (10s) pace the loops; the
	// status is posted when it changed or every ReportInterval.
	LeaseInterval, StatusInterval time.Duration
	Clock                         clock.WithTicker
	Logger                        *slog.Logger
	// OnReady, when set, is called each time the agent posted the node
	// Ready after it was not (or at its first post).
	OnReady func()

	node     atomic.Pointer[corev1.Node]
	lease    *coordinationv1.Lease
	pokeOnce sync.Once
	pokes    chan struct{}
}

// Poke asks for a status post now instead of at the next tick, e.g. when
// the kubelet's readiness changed. It never blocks.
func (a *Agent) Poke() {
	select {
	case a.pokeChan() <- struct{}{}:
	default:
	}
}

func (a *Agent) pokeChan() chan struct{} {
	a.pokeOnce.Do(func() { a.pokes = make(chan struct{}, 1) })
	return a.pokes
}

// Node returns the last Node object read or written, nil before
// registration. Do not modify it.
func (a *Agent) Node() *corev1.Node { return a.node.Load() }

func (a *Agent) defaults() error {
	if err := a.Config.validate(); err != nil {
		return err
	}
	if a.Client == nil {
		return fmt.Errorf("node %s: Client is required", a.Config.Name)
	}
	if a.Health == nil {
		a.Health = func() Health { return Health{} }
	}
	if a.LeaseInterval <= 0 {
		a.LeaseInterval = 10 * time.Second
	}
	if a.StatusInterval <= 0 {
		a.StatusInterval = 10 * time.Second
	}
	if a.Clock == nil {
		a.Clock = clock.RealClock{}
	}
	if a.Logger == nil {
		a.Logger = slog.Default()
	}
	a.Logger = a.Logger.With("node", a.Config.Name)
	return nil
}

// Run registers the node, then renews the lease and posts the status until
// ctx ends. API failures are logged and retried on the next tick.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.defaults(); err != nil {
		return err
	}
	for {
		err := a.register(ctx)
		if err == nil {
			break
		}
		a.Logger.Warn("registering the node", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-a.Clock.After(time.Second):
		}
	}
	a.tick(ctx, true, true)
	lease, status := a.Clock.NewTicker(a.LeaseInterval), a.Clock.NewTicker(a.StatusInterval)
	defer lease.Stop()
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-lease.C():
			a.tick(ctx, true, false)
		case <-status.C():
			a.tick(ctx, false, true)
		case <-a.pokeChan():
			a.tick(ctx, false, true)
		}
	}
}

func (a *Agent) tick(ctx context.Context, lease, status bool) {
	if status {
		if err := a.syncStatus(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Warn("posting the node status", "err", err)
		}
	}
	if lease {
		if err := a.renewLease(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Warn("renewing the node lease", "err", err)
		}
	}
}

// register creates the Node, or adopts the one that exists.
func (a *Agent) register(ctx context.Context) error {
	n, err := a.Client.CoreV1().Nodes().Create(ctx, New(a.Config), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		n, err = a.Client.CoreV1().Nodes().Get(ctx, a.Config.Name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	a.node.Store(n)
	a.Logger.Debug("node registered", "uid", n.UID)
	return nil
}

// statusRetries is how many times a status post is tried at once, as the
// kubelet does: controllers write the node too (podCIDR, taints), so the
// first try may conflict.
const statusRetries = 5

// syncStatus posts the status when it must, retrying conflicts at once.
func (a *Agent) syncStatus(ctx context.Context) error {
	var err error
	for range statusRetries {
		if err = a.trySyncStatus(ctx); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// trySyncStatus reads the node (the control plane sets its podCIDR and
// taints) and posts the status when it must.
func (a *Agent) trySyncStatus(ctx context.Context) error {
	n, err := a.Client.CoreV1().Nodes().Get(ctx, a.Config.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return a.register(ctx)
	}
	if err != nil {
		return err
	}
	st, post := Status(a.Config, a.Health(), n.Status, a.Clock.Now())
	if post {
		was := readyCondition(n.Status)
		n = n.DeepCopy()
		n.Status = st
		if n, err = a.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if now := readyCondition(st); now.Status != was.Status {
			if now.Status == corev1.ConditionTrue {
				a.Logger.Info("node ready")
				if a.OnReady != nil {
					a.OnReady()
				}
			} else {
				a.Logger.Info("node not ready", "reason", now.Reason, "message", now.Message)
			}
		}
	}
	a.node.Store(n)
	return nil
}

// readyCondition returns the Ready condition of st (empty when absent).
func readyCondition(st corev1.NodeStatus) corev1.NodeCondition {
	for _, c := range st.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// renewLease updates the lease it last wrote; on a conflict or without one
// it reads it first, and creates it when missing.
func (a *Agent) renewLease(ctx context.Context) error {
	n := a.Node()
	leases := a.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	if a.lease != nil {
		l, err := leases.Update(ctx, Lease(n, a.lease, a.Clock.Now()), metav1.UpdateOptions{})
		if err == nil {
			a.lease = l
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
		a.lease = nil
	}
	cur, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l, err := leases.Create(ctx, Lease(n, nil, a.Clock.Now()), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		a.lease = l
		return nil
	case err != nil:
		return err
	}
	l, err := leases.Update(ctx, Lease(n, cur, a.Clock.Now()), metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	a.lease = l
	return nil
}
