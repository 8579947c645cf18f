package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
)

// Event reasons, as upstream.
const (
	EventNodeNotReady         = "NodeNotReady"
	EventTaintManagerEviction = "TaintManagerEviction"
)

// reconcileNode marks a silent node Unknown, its pods not ready, and keeps
// the node's taints in line with its conditions.
func (c *Controller) reconcileNode(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	node, ok := c.nodes.Get("", req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	now := c.clock.Now()
	lease, _ := c.leases.Get(corev1.NamespaceNodeLease, req.Name)
	h := c.see(req.Name, node, lease)
	var requeue time.Duration
	later := func(d time.Duration) {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}

	if left := silentFor(node, h, now, c.cfg.GracePeriod, c.cfg.StartupGracePeriod); left > 0 {
		later(left)
	} else if conds, changed := staleConditions(node, now); changed {
		upd := node.DeepCopy()
		upd.Status.Conditions = conds
		written, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return controllers.Result{}, fmt.Errorf("marking node %s unknown: %w", req.Name, err)
		}
		c.log.Info("node stopped posting status", "node", req.Name, "silentFor", now.Sub(h.probe).Round(time.Millisecond).String())
		if c.cfg.Recorder != nil {
			c.cfg.Recorder.Eventf(written, corev1.EventTypeNormal, EventNodeNotReady, "Node %s status is now: %s", req.Name, EventNodeNotReady)
		}
		node = written
	}
	if readyStatus(node) == corev1.ConditionUnknown {
		if err := c.markPodsNotReady(ctx, node, now); err != nil {
			return controllers.Result{}, err
		}
	}

	zones := c.zoneSnapshot(now)
	noExecute := !zones.allDisrupted
	if !noExecute && noExecuteKey(readyStatus(node)) != "" {
		later(c.cfg.MonitorPeriod) // look again when the disruption may be over
	}
	d := desiredTaints(node, noExecute, false, now)
	if d.heldBack {
		if ok, wait := c.takeToken(zoneOf(node), zones, now); ok {
			d = desiredTaints(node, noExecute, true, now)
		} else if wait > 0 {
			later(wait)
		} else {
			later(c.cfg.MonitorPeriod) // the zone's rate is zero for now
		}
	}
	if d.changed {
		if err := c.patchTaints(ctx, node, d.taints); err != nil {
			return controllers.Result{}, err
		}
		// As upstream: NoExecute taints (evictions follow) are news;
		// NoSchedule taints that track conditions are routine.
		lvl := slog.LevelDebug
		if !slices.Equal(noExecuteKeys(node.Spec.Taints), noExecuteKeys(d.taints)) {
			lvl = slog.LevelInfo
		}
		c.log.Log(ctx, lvl, "node taints changed", "node", req.Name, "taints", taintKeys(d.taints))
	}
	return controllers.Result{RequeueAfter: requeue}, nil
}

func (c *Controller) patchTaints(ctx context.Context, node *corev1.Node, taints []corev1.Taint) error {
	patch, err := json.Marshal(map[string]any{
		// Pinned: a concurrent change of the taints fails this write.
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting the taints of node %s: %w", node.Name, err)
	}
	return nil
}

// noExecuteKeys returns the keys of the NoExecute taints, sorted.
func noExecuteKeys(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t.Key)
		}
	}
	slices.Sort(out)
	return out
}

func taintKeys(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

// markPodsNotReady sets the Ready condition of the node's ready pods to
// False: their kubelet cannot.
func (c *Controller) markPodsNotReady(ctx context.Context, node *corev1.Node, now time.Time) error {
	var errs []error
	for _, pod := range c.pods.ByIndex(cache.ByNodeName, node.Name) {
		if pod.Spec.NodeName != node.Name || pod.DeletionTimestamp != nil || !podReady(pod) {
			continue
		}
		upd := pod.DeepCopy()
		for i := range upd.Status.Conditions {
			if cond := &upd.Status.Conditions[i]; cond.Type == corev1.PodReady {
				cond.Status, cond.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(now)
			}
		}
		_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("marking pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
		default:
			c.log.Debug("marked pod not ready", "pod", pod.Namespace+"/"+pod.Name, "node", node.Name)
			if c.cfg.Recorder != nil {
				c.cfg.Recorder.Event(pod, corev1.EventTypeWarning, EventNodeNotReady, "Node is not ready")
			}
		}
	}
	return errors.Join(errs...)
}

// reconcileEvictions deletes the node's pods whose tolerations of its
// NoExecute taints ran out, and comes back when the next one will.
func (c *Controller) reconcileEvictions(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	node, ok := c.nodes.Get("", req.Name)
	if !ok {
		c.forgetTaints(req.Name, nil)
		return controllers.Result{}, nil
	}
	now := c.clock.Now()
	taints := noExecuteTaints(node)
	c.forgetTaints(req.Name, taints)
	addedAt := func(t corev1.Taint) time.Time {
		if t.TimeAdded != nil {
			return t.TimeAdded.Time
		}
		return c.firstSeen(req.Name, t, now)
	}
	var pods []*corev1.Pod
	for _, p := range c.pods.ByIndex(cache.ByNodeName, req.Name) {
		if p.Spec.NodeName == req.Name {
			pods = append(pods, p)
		}
	}
	due, next := evictionPlan(pods, taints, addedAt, now)
	var errs []error
	for _, pod := range due {
		errs = append(errs, c.evictPod(ctx, pod, now))
	}
	if err := errors.Join(errs...); err != nil {
		return controllers.Result{}, err
	}
	if next.IsZero() {
		return controllers.Result{}, nil
	}
	return controllers.Result{RequeueAfter: next.Sub(now)}, nil
}

// evictPod says why the pod goes (a DisruptionTarget condition, as
// upstream) and deletes it.
func (c *Controller) evictPod(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	api := c.client.CoreV1().Pods(pod.Namespace)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
		Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(now),
	}}}})
	if err != nil {
		return err
	}
	if _, err := api.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("marking pod %s/%s for eviction: %w", pod.Namespace, pod.Name, err)
	}
	err = api.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.log.Info("evicted pod", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName)
	if c.cfg.Recorder != nil {
		c.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, EventTaintManagerEviction, "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	}
	return nil
}

func taintID(node string, t corev1.Taint) string {
	return node + "\x00" + t.Key + "\x00" + t.Value + "\x00" + string(t.Effect)
}

// firstSeen returns when a NoExecute taint without timeAdded was first seen.
func (c *Controller) firstSeen(node string, t corev1.Taint, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := taintID(node, t)
	if at, ok := c.taintSeen[id]; ok {
		return at
	}
	c.taintSeen[id] = now
	return now
}

// forgetTaints drops the first-seen times of the node's taints that are gone.
func (c *Controller) forgetTaints(node string, current []corev1.Taint) {
	keep := map[string]bool{}
	for _, t := range current {
		keep[taintID(node, t)] = true
	}
	prefix := node + "\x00"
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.taintSeen {
		if len(id) > len(prefix) && id[:len(prefix)] == prefix && !keep[id] {
			delete(c.taintSeen, id)
		}
	}
}
