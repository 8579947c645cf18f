package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/internal/crash"
	"github.com/kubebus/kubebus/kubelet/pods"
	"github.com/kubebus/kubebus/kubelet/pods/volumes"
	"github.com/kubebus/kubebus/kubelet/prober"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Kubelet runs the pods of one node. Build it with New; Run it.
type Kubelet struct {
	cfg      Config
	rt       Runtime
	log      *slog.Logger
	informer *informer.Informer[*corev1.Pod]
	q        workqueue.TypedRateLimitingInterface[types.UID]
	probes   *prober.Manager
	prober   *prober.Prober
	volumes  *volumes.Manager
	recorder record.EventRecorder
	getter   apiGetter
	svcEnv   *serviceEnv
	static   *staticSource

	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod // desired pods: API and static
	// mirrors are the API's mirror pods of this node, by namespace/name.
	mirrors map[string]*corev1.Pod
	state   map[types.UID]*podState
	// seen is the last relist's fingerprint of each pod in the runtime.
	seen map[types.UID]string
	// lastUsed records when an image (by ID) last started a container.
	lastUsed map[string]time.Time
	synced   bool // the pod informer and the static source are synced
}

// podState is what the kubelet remembers of a pod between syncs.
type podState struct {
	backoff map[string]pods.BackoffEntry
	waiting map[string]pods.Waiting // the last plan's and start errors
	// errs are start errors by container name (CreateContainerConfigError,
	// ErrImagePull...), kept until the container starts.
	errs map[string]pods.Waiting
}

// New builds a Kubelet.
func New(cfg Config) (*Kubelet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	k := &Kubelet{
		cfg: cfg, rt: cfg.Runtime, log: cfg.Logger.With("node", cfg.NodeName),
		q:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.UID]()),
		pods: map[types.UID]*corev1.Pod{}, mirrors: map[string]*corev1.Pod{}, state: map[types.UID]*podState{},
		seen: map[types.UID]string{}, lastUsed: map[string]time.Time{},
		getter: apiGetter{cfg.Client},
	}
	k.svcEnv = &serviceEnv{get: func(ctx context.Context) (*corev1.Service, error) {
		return cfg.Client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	}}
	var err error
	k.volumes, err = volumes.New(volumes.Config{Root: cfg.RootDir, Getter: k.getter, Claims: k.getter, Tokens: k.getter, NodeAllocatable: cfg.Allocatable})
	if err != nil {
		return nil, fmt.Errorf("kubelet: volumes: %w", err)
	}
	k.prober = prober.NewProber(cfg.Runtime)
	k.probes, err = prober.NewManager(prober.Config{Prober: k.prober, Clock: cfg.Clock, Logger: k.log, OnUpdate: k.onProbe, OnFailure: k.onProbeFailure})
	if err != nil {
		return nil, fmt.Errorf("kubelet: probes: %w", err)
	}
	k.informer, err = informer.New(informer.Config[*corev1.Pod]{
		JetStream: cfg.JetStream, Component: "kubelet", Resource: "pods", Node: cfg.NodeName, Instance: cfg.Instance,
		New: func() *corev1.Pod { return &corev1.Pod{} }, Logger: k.log,
	})
	if err != nil {
		return nil, err
	}
	k.informer.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    k.onAPIPod,
		UpdateFunc: func(_, p *corev1.Pod) { k.onAPIPod(p) },
		DeleteFunc: k.onAPIPodDelete,
	})
	if cfg.ManifestDir != "" {
		k.static = &staticSource{dir: cfg.ManifestDir, node: cfg.NodeName, k: k, kickCh: make(chan struct{}, 1)}
	}
	return k, nil
}

// Run runs the kubelet until ctx ends. Containers keep running when it
// returns: a restarted kubelet adopts them.
func (k *Kubelet) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec, stop := controllers.Recorder(ctx, k.cfg.Client, "kubelet")
	defer stop()
	k.recorder = rec

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	wg.Add(2)
	go func() { defer wg.Done(); errc <- k.informer.Run(ctx) }()
	go func() { defer wg.Done(); errc <- k.probes.Run(ctx) }()
	go func() { <-ctx.Done(); k.q.ShutDown() }()
	if err := k.informer.WaitForSync(ctx); err != nil {
		return nil
	}
	if k.static != nil {
		if err := k.static.load(); err != nil {
			k.log.Warn("reading static pods", "dir", k.cfg.ManifestDir, "err", err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); k.static.run(ctx) }()
	}
	k.mu.Lock()
	k.synced = true
	k.mu.Unlock()
	k.relist(ctx) // adopt what runs, find orphans
	k.log.Debug("kubelet syncing pods", "workers", k.cfg.Workers)
	for range k.cfg.Workers {
		wg.Add(1)
		go func() { defer wg.Done(); k.work(ctx, k.syncPod) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); k.every(ctx, "relist", k.cfg.RelistPeriod, k.relist) }()
	go func() { defer wg.Done(); k.every(ctx, "imageGC", k.cfg.ImageGCPeriod, k.imageGC) }()
	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
	}
	cancel()
	wg.Wait()
	if first != nil && !errors.Is(first, context.Canceled) {
		return first
	}
	return nil
}

// ProbeDialer makes probes connect through dial (e.g. from the node's
// network namespace). Call it before Run.
func (k *Kubelet) ProbeDialer(dial prober.DialFunc) { k.prober.WithDialer(dial) }

// Ready reports whether the kubelet has synced its sources.
func (k *Kubelet) Ready() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.synced
}

func (k *Kubelet) onAPIPod(p *corev1.Pod) {
	if p.Spec.NodeName != k.cfg.NodeName {
		return
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		k.mu.Lock()
		k.mirrors[p.Namespace+"/"+p.Name] = p
		k.mu.Unlock()
		if k.static != nil {
			k.static.kick()
		}
		return
	}
	k.mu.Lock()
	k.pods[p.UID] = p
	k.mu.Unlock()
	k.q.Add(p.UID)
}

func (k *Kubelet) onAPIPodDelete(p *corev1.Pod) {
	k.mu.Lock()
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		if cur := k.mirrors[p.Namespace+"/"+p.Name]; cur != nil && cur.UID == p.UID {
			delete(k.mirrors, p.Namespace+"/"+p.Name)
		}
		k.mu.Unlock()
		if k.static != nil {
			k.static.kick()
		}
		return
	}
	delete(k.pods, p.UID)
	k.mu.Unlock()
	k.q.Add(p.UID)
}

func (k *Kubelet) onProbe(u prober.Update) { k.q.Add(u.PodUID) }

// onProbeFailure records an Unhealthy event for every failed probe
// attempt, as upstream does; the recorder folds repeats into a count.
func (k *Kubelet) onProbeFailure(u prober.Update) {
	if k.recorder == nil {
		return
	}
	if p := k.pod(u.PodUID); p != nil {
		k.recorder.Eventf(p, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", u.Kind, u.Message)
	}
}

// pod returns the desired pod, nil when there is none.
func (k *Kubelet) pod(uid types.UID) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[uid]
}

// work syncs the queued pods with sync (k.syncPod) until the queue shuts
// down. A panic in sync is recovered, logged with its stack and counted in
// kubebus_panics_total{component="kubelet",where="syncPod"}: the pod is
// retried with backoff and the worker goes on.
func (k *Kubelet) work(ctx context.Context, sync func(context.Context, types.UID) error) {
	for {
		uid, quit := k.q.Get()
		if quit {
			return
		}
		err := crash.Do(k.log, "kubelet", "syncPod", string(uid), func() error { return sync(ctx, uid) })
		switch {
		case err == nil:
			k.q.Forget(uid)
		case ctx.Err() != nil:
		default:
			k.log.Warn("syncing a pod", "uid", uid, "err", err)
			k.q.AddRateLimited(uid)
		}
		k.q.Done(uid)
	}
}

// podRuntime returns what the runtime holds of one pod.
func (k *Kubelet) podRuntime(ctx context.Context, uid types.UID) ([]runtime.Sandbox, []runtime.Container, error) {
	sbs, err := k.rt.ListPodSandboxes(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	cs, err := k.rt.ListContainers(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing containers: %w", err)
	}
	var mySB []runtime.Sandbox
	for _, s := range sbs {
		if s.PodUID == string(uid) {
			mySB = append(mySB, s)
		}
	}
	var myC []runtime.Container
	for _, c := range cs {
		if c.Labels[runtime.LabelPodUID] == string(uid) {
			myC = append(myC, c)
		}
	}
	return mySB, myC, nil
}

// probeResults returns the probe results of the pod's containers.
func (k *Kubelet) probeResults(cs []runtime.Container) map[string]pods.ContainerProbes {
	out := map[string]pods.ContainerProbes{}
	for _, c := range cs {
		r := k.probes.Results(c.ID)
		out[c.ID] = pods.ContainerProbes{Liveness: pods.ProbeResult(r.Liveness), Readiness: pods.ProbeResult(r.Readiness), Startup: pods.ProbeResult(r.Startup)}
	}
	return out
}

// syncPod brings one pod's containers in line with its spec and reports
// its status.
func (k *Kubelet) syncPod(ctx context.Context, uid types.UID) error {
	pod := k.pod(uid)
	sbs, cs, err := k.podRuntime(ctx, uid)
	if err != nil {
		return err
	}
	if pod == nil && len(sbs) == 0 && len(cs) == 0 {
		k.forget(uid)
		return nil
	}
	k.mu.Lock()
	st := k.state[uid]
	if st == nil {
		st = &podState{errs: map[string]pods.Waiting{}}
		k.state[uid] = st
	}
	backoff := st.backoff
	k.mu.Unlock()

	now := k.cfg.Clock.Now()
	plan := pods.Compute(pods.PlanInput{Pod: pod, Sandboxes: sbs, Containers: cs, Backoff: backoff, Probes: k.probeResults(cs), Now: now})
	actErr := k.execute(ctx, pod, plan, st)

	k.mu.Lock()
	st.backoff = plan.Backoff
	st.waiting = plan.Waiting
	k.mu.Unlock()

	if pod != nil {
		if sbs, cs, err = k.podRuntime(ctx, uid); err != nil {
			return err
		}
		if err := k.report(ctx, pod, sbs, cs, st); err != nil {
			return err
		}
	}
	if !plan.RetryAt.IsZero() {
		k.q.AddAfter(uid, max(plan.RetryAt.Sub(k.cfg.Clock.Now()), 10*time.Millisecond))
	}
	return actErr
}

// forget drops what the kubelet remembers of a pod that is gone.
func (k *Kubelet) forget(uid types.UID) {
	k.mu.Lock()
	delete(k.state, uid)
	delete(k.seen, uid)
	k.mu.Unlock()
	k.probes.RemovePod(uid)
}

// running lists the pod's running containers for the prober.
func running(cs []runtime.Container) []prober.Container {
	var out []prober.Container
	for _, c := range cs {
		if c.State == runtime.ContainerRunning {
			out = append(out, prober.Container{Name: c.Name, ID: c.ID, StartedAt: c.StartedAt})
		}
	}
	return out
}

// podIP returns the IP of the pod's ready sandbox.
func podIP(sbs []runtime.Sandbox) string {
	for _, s := range sbs {
		if s.State == runtime.SandboxReady {
			return s.IP
		}
	}
	return ""
}
