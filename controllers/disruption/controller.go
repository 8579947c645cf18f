package disruption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name, as upstream's --controllers knows it.
const Name = "disruption"

// Config configures the controller.
type Config struct {
	Client               kubernetes.Interface
	PodDisruptionBudgets *informer.Informer[*policyv1.PodDisruptionBudget]
	Pods                 *informer.Informer[*corev1.Pod]
	// The controllers whose scale a percentage or maxUnavailable counts.
	ReplicaSets  *informer.Informer[*appsv1.ReplicaSet]
	Deployments  *informer.Informer[*appsv1.Deployment]
	StatefulSets *informer.Informer[*appsv1.StatefulSet]
	// Recorder, when set, receives the controller's events.
	Recorder record.EventRecorder
	Options  controllers.Options
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("disruption: Client is required")
	case c.PodDisruptionBudgets == nil || c.Pods == nil:
		return errors.New("disruption: the PodDisruptionBudgets and Pods informers are required")
	case c.ReplicaSets == nil || c.Deployments == nil || c.StatefulSets == nil:
		return errors.New("disruption: the ReplicaSets, Deployments and StatefulSets informers are required")
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// The parts of the caches the reconciler reads.
type (
	getter[T any] interface {
		Get(namespace, name string) (T, bool)
	}
	namespaceLister[T any] interface {
		ListNamespace(ns string) []T
	}
	budgetCache interface {
		getter[*policyv1.PodDisruptionBudget]
		namespaceLister[*policyv1.PodDisruptionBudget]
	}
)

type reconciler struct {
	client       kubernetes.Interface
	budgets      budgetCache
	pods         namespaceLister[*corev1.Pod]
	podGetter    getter[*corev1.Pod]
	replicaSets  getter[*appsv1.ReplicaSet]
	deployments  getter[*appsv1.Deployment]
	statefulSets getter[*appsv1.StatefulSet]
	recorder     record.EventRecorder
	now          func() time.Time
	log          *slog.Logger
}

// Controller is the disruption controller: one queue of budgets, one of
// pods whose DisruptionTarget condition may go stale.
type Controller struct {
	budgets, stalePods *controllers.Controller
}

var _ controllers.Runnable = (*Controller)(nil)

// New builds the controller and registers its handlers on the informers:
// call it before they run.
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{client: cfg.Client, budgets: cfg.PodDisruptionBudgets, pods: cfg.Pods, podGetter: cfg.Pods, replicaSets: cfg.ReplicaSets,
		deployments: cfg.Deployments, statefulSets: cfg.StatefulSets, recorder: cfg.Recorder, now: cfg.Now,
		log: cfg.Options.Logger.With("controller", Name)}
	c := &Controller{
		budgets:   controllers.New(Name, r, cfg.Options),
		stalePods: controllers.New(Name+"-stale-pods", controllers.ReconcileFunc(r.reconcilePod), cfg.Options),
	}
	enqueue := func(pdb *policyv1.PodDisruptionBudget) { c.budgets.Enqueue(controllers.KeyOf(pdb)) }
	cfg.PodDisruptionBudgets.AddHandler(informer.HandlerFuncs[*policyv1.PodDisruptionBudget]{
		AddFunc:    enqueue,
		UpdateFunc: func(_, pdb *policyv1.PodDisruptionBudget) { enqueue(pdb) },
	})
	// A pod that changes changes the budgets that select it (before or
	// after the change).
	podChanged := func(pods ...*corev1.Pod) {
		for _, pdb := range r.budgetsOf(pods...) {
			enqueue(pdb)
		}
		p := pods[len(pods)-1]
		if stale, _ := staleDisruption(p, r.now()); stale {
			c.stalePods.Enqueue(controllers.KeyOf(p))
		}
	}
	cfg.Pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod) { podChanged(p) },
		UpdateFunc: func(old, p *corev1.Pod) { podChanged(old, p) },
		DeleteFunc: func(p *corev1.Pod) { podChanged(p) },
	})
	return c, nil
}

// Run works both queues until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, q := range []*controllers.Controller{c.budgets, c.stalePods} {
		wg.Add(1)
		go func() { defer wg.Done(); q.Run(ctx) }()
	}
	wg.Wait()
}

// budgetsOf returns the budgets that select any of the pods.
func (r *reconciler) budgetsOf(pods ...*corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	seen := map[string]bool{}
	for _, pod := range pods {
		for _, pdb := range r.budgets.ListNamespace(pod.Namespace) {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || seen[pdb.Name] || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			seen[pdb.Name] = true
			out = append(out, pdb)
		}
	}
	return out
}

// Reconcile computes the budget's status and writes it when it changed.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	pdb, ok := r.budgets.Get(req.Namespace, req.Name)
	if !ok || pdb.DeletionTimestamp != nil {
		return controllers.Result{}, nil
	}
	now := r.now()
	res, err := r.compute(pdb, now)
	if err != nil {
		// As upstream: a budget whose state is unknown allows nothing.
		r.event(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		if safe := FailSafe(pdb, err, now); !apiequality.Semantic.DeepEqual(safe, pdb.Status) {
			if werr := r.writeStatus(ctx, pdb, safe); werr != nil {
				return controllers.Result{}, werr
			}
		}
		return controllers.Result{}, fmt.Errorf("computing budget %s: %w", req, err)
	}
	if len(res.Unmanaged) > 0 {
		r.log.Debug("budget selects pods without a controller", "budget", req.String(), "pods", res.Unmanaged)
	}
	if res.Changed {
		if err := r.writeStatus(ctx, pdb, res.Status); err != nil {
			return controllers.Result{}, err
		}
	}
	var out controllers.Result
	if !res.Recheck.IsZero() {
		out.RequeueAfter = max(res.Recheck.Sub(now), time.Second)
	}
	return out, nil
}

// compute selects the budget's pods and runs Compute.
func (r *reconciler) compute(pdb *policyv1.PodDisruptionBudget, now time.Time) (Result, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return Result{}, fmt.Errorf("invalid selector: %w", err)
	}
	var pods []*corev1.Pod
	for _, p := range r.pods.ListNamespace(pdb.Namespace) {
		if sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	return Compute(pdb, pods, r.scaleOf, now)
}

// scaleOf finds the scale of a pod's controller in the caches: a
// ReplicaSet's (or its Deployment's) or a StatefulSet's replicas.
func (r *reconciler) scaleOf(ns string, ref *metav1.OwnerReference) (Scale, bool, error) {
	replicas := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch {
	case ref.Kind == "ReplicaSet" && groupOf(ref) == appsv1.GroupName:
		rs, ok := r.replicaSets.Get(ns, ref.Name)
		if !ok || rs.UID != ref.UID {
			return Scale{}, false, nil
		}
		if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "Deployment" && groupOf(owner) == appsv1.GroupName {
			d, ok := r.deployments.Get(ns, owner.Name)
			if !ok || d.UID != owner.UID {
				return Scale{}, false, nil
			}
			return Scale{UID: d.UID, Replicas: replicas(d.Spec.Replicas)}, true, nil
		}
		return Scale{UID: rs.UID, Replicas: replicas(rs.Spec.Replicas)}, true, nil
	case ref.Kind == "StatefulSet" && groupOf(ref) == appsv1.GroupName:
		ss, ok := r.statefulSets.Get(ns, ref.Name)
		if !ok || ss.UID != ref.UID {
			return Scale{}, false, nil
		}
		return Scale{UID: ss.UID, Replicas: replicas(ss.Spec.Replicas)}, true, nil
	}
	return Scale{}, false, nil
}

// groupOf returns the API group of an owner reference.
func groupOf(ref *metav1.OwnerReference) string {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// writeStatus writes the budget's status; a conflict is retried by the
// queue once the cache has the newer budget.
func (r *reconciler) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, st policyv1.PodDisruptionBudgetStatus) error {
	next := pdb.DeepCopy()
	next.Status = st
	_, err := r.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case err == nil:
		r.log.Debug("updated budget status", "budget", pdb.Namespace+"/"+pdb.Name, "allowed", st.DisruptionsAllowed,
			"healthy", st.CurrentHealthy, "desired", st.DesiredHealthy, "expected", st.ExpectedPods)
		return nil
	case apierrors.IsNotFound(err):
		return nil // deleted meanwhile
	default:
		return fmt.Errorf("updating status of budget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
}

func (r *reconciler) event(obj *policyv1.PodDisruptionBudget, typ, reason, format string, args ...any) {
	if r.recorder != nil {
		r.recorder.Eventf(obj, typ, reason, format, args...)
	}
}
