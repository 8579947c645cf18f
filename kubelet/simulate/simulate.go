package simulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/internal/crash"
	"github.com/kubebus/kubebus/kubelet/certs"
	"github.com/kubebus/kubebus/kubelet/node"
	"github.com/kubebus/kubebus/kubelet/server"
)

// Config configures a set of hollow nodes.
type Config struct {
	Client    kubernetes.Interface
	JetStream jetstream.JetStream // shared by every node's pod informer
	// Nodes is how many hollow nodes to run, named Prefix0..Prefix<N-1>.
	Nodes  int
	Prefix string
	// Capacity of every node (cpu, memory, pods, ephemeral-storage).
	Capacity corev1.ResourceList
	// NodeInfo: versions reported by every node.
	NodeInfo corev1.NodeSystemInfo
	// Workers is the size of the pool that writes pod status (default 32).
	Workers int
	// LeaseInterval and StatusInterval pace every node's lease renewals
	// and status posts (default 10s each, as a kubelet).
	LeaseInterval, StatusInterval time.Duration
	// NodeIPRange is where the nodes' InternalIPs come from, node i
	// getting its (i+1)-th address; it must lie in 127.0.0.0/8 (default
	// DefaultNodeIPRange, see ParseNodeIPRange).
	NodeIPRange netip.Prefix
	// Logs, when set, has the nodes serve their pods' logs; without it
	// they report no kubelet port and the API server's pods/log requests
	// fail (on loopback).
	Logs *LogConfig
	// Finish says when and how pods that run to completion end.
	Finish Finish
	// Instance is appended to the informers' durable names.
	Instance string
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil || c.JetStream == nil:
		return errors.New("simulate: Client and JetStream are required")
	case c.Nodes <= 0 || c.Nodes > 65000:
		return fmt.Errorf("simulate: Nodes must be between 1 and 65000, not %d", c.Nodes)
	case c.Prefix == "":
		return errors.New("simulate: Prefix is required")
	}
	if !c.NodeIPRange.IsValid() {
		c.NodeIPRange = netip.MustParsePrefix(DefaultNodeIPRange)
	}
	if c.Logs != nil {
		if err := c.Logs.validate(); err != nil {
			return err
		}
	}
	if c.Workers <= 0 {
		c.Workers = 32
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// key names a pod on hollow node i.
type key struct {
	node            int
	namespace, name string
}

type hollow struct {
	agent *node.Agent
	pods  *informer.Informer[*corev1.Pod]
}

// Run runs the hollow nodes until ctx ends.
func Run(ctx context.Context, c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	addrs, err := NodeIPs(c.NodeIPRange, c.Nodes)
	if err != nil {
		return err
	}
	// The log listeners first, so the nodes can report their ports.
	var (
		lns   []net.Listener
		ports = make([]int32, c.Nodes)
	)
	if c.Logs != nil {
		if lns, ports, err = listen(addrs, c.Logs.Port); err != nil {
			return err
		}
		defer func() {
			for _, ln := range lns {
				_ = ln.Close() // already closed once served
			}
		}()
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]())
	nodes := make([]hollow, c.Nodes)
	for i := range nodes {
		name := fmt.Sprint(c.Prefix, i)
		nodes[i].agent = &node.Agent{
			Config: node.Config{Name: name, InternalIP: addrs[i].String(), KubeletPort: ports[i], Capacity: c.Capacity, NodeInfo: c.NodeInfo,
				Labels: map[string]string{corev1.LabelInstanceTypeStable: "hollow"}},
			Client: c.Client, Clock: c.Clock, Logger: c.Logger,
			LeaseInterval: c.LeaseInterval, StatusInterval: c.StatusInterval,
		}
		inf, err := informer.New(informer.Config[*corev1.Pod]{
			JetStream: c.JetStream, Component: "kubelet", Resource: "pods", Node: name, Instance: c.Instance,
			New: func() *corev1.Pod { return &corev1.Pod{} }, Logger: c.Logger.With("node", name),
		})
		if err != nil {
			return err
		}
		enqueue := func(p *corev1.Pod) { q.Add(key{node: i, namespace: p.Namespace, name: p.Name}) }
		inf.AddHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: enqueue, UpdateFunc: func(_, p *corev1.Pod) { enqueue(p) }})
		nodes[i].pods = inf
	}
	var (
		logs     *server.Server
		managers []*certs.Manager
	)
	if c.Logs != nil {
		if logs, managers, err = newLogServer(c, addrs, nodes); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 2*c.Nodes+1+len(managers))
	if logs != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errc <- logs.Serve(ctx, lns...) }()
	}
	for _, m := range managers {
		wg.Add(1)
		go func() { defer wg.Done(); errc <- m.Run(ctx) }()
	}
	for _, n := range nodes {
		wg.Add(2)
		go func() { defer wg.Done(); errc <- n.agent.Run(ctx) }()
		go func() { defer wg.Done(); errc <- n.pods.Run(ctx) }()
	}
	s := &syncer{cfg: c, nodes: nodes, q: q}
	for range c.Workers {
		wg.Add(1)
		go func() { defer wg.Done(); s.work(ctx) }()
	}
	c.Logger.Info("hollow nodes starting", "nodes", c.Nodes, "prefix", c.Prefix, "workers", c.Workers,
		"addresses", fmt.Sprintf("%s-%s", addrs[0], addrs[len(addrs)-1]), "logs", logs != nil)
	var first error
	go func() { <-ctx.Done(); q.ShutDown() }()
	go func() { wg.Wait(); close(errc) }()
	for err := range errc {
		if err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

type syncer struct {
	cfg   Config
	nodes []hollow
	q     workqueue.TypedRateLimitingInterface[key]
}

func (s *syncer) work(ctx context.Context) {
	for {
		k, quit := s.q.Get()
		if quit {
			return
		}
		err := crash.Do(s.cfg.Logger, "kubelet-simulated", "syncPod", k.namespace+"/"+k.name, func() error { return s.sync(ctx, k) })
		switch {
		case err == nil:
			s.q.Forget(k)
		case errors.Is(err, errNotRegistered):
			s.q.AddAfter(k, time.Second)
		case errors.As(err, new(*crash.Error)):
			s.q.AddRateLimited(k) // logged and counted already
		default:
			if ctx.Err() == nil && !apierrors.IsConflict(err) {
				s.cfg.Logger.Warn("syncing a pod", "node", s.nodes[k.node].agent.Config.Name, "pod", k.namespace+"/"+k.name, "err", err)
			}
			s.q.AddRateLimited(k)
		}
		s.q.Done(k)
	}
}

var errNotRegistered = errors.New("simulate: the node is not registered yet")

// sync makes one pod's status what Plan says.
func (s *syncer) sync(ctx context.Context, k key) error {
	h := s.nodes[k.node]
	pod, ok := h.pods.Get(k.namespace, k.name)
	if !ok {
		return nil
	}
	n := h.agent.Node()
	if n == nil {
		return errNotRegistered
	}
	act, st, wait := Plan(pod, n, s.cfg.Clock.Now(), s.cfg.Finish)
	if wait > 0 {
		// Its containers exit then: look at it again.
		s.q.AddAfter(k, wait)
	}
	pods := s.cfg.Client.CoreV1().Pods(pod.Namespace)
	switch act {
	case UpdateStatus:
		p := pod.DeepCopy()
		p.Status = *st
		_, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case Delete:
		zero := int64(0)
		uid := pod.UID
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	return nil
}
