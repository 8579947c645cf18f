package daemonset

import (
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/controllers/history"
)

// world is what one sync of a DaemonSet sees: the DaemonSet, every node,
// the DaemonSet's pods grouped by the node they are for, and the hash of
// its current revision.
type world struct {
	ds    *appsv1.DaemonSet
	elig  *eligibility
	nodes []*corev1.Node
	// byNode holds the DaemonSet's pods (terminating ones included) by
	// targetNode; pods for no node are under "".
	byNode map[string][]*corev1.Pod
	hash   string
	now    time.Time
}

func newWorld(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string, now time.Time) *world {
	byNode := make(map[string][]*corev1.Pod, len(nodes))
	for _, p := range pods {
		n := targetNode(p)
		byNode[n] = append(byNode[n], p)
	}
	for _, ps := range byNode {
		slices.SortFunc(ps, olderFirst)
	}
	return &world{ds: ds, elig: newEligibility(ds), nodes: nodes, byNode: byNode, hash: hash, now: now}
}

// actions are the writes a sync makes.
type actions struct {
	// create lists the nodes that get a new pod.
	create []string
	// delete lists the pods to delete.
	delete []*corev1.Pod
	// failed lists the pods of delete that failed (each gets a
	// FailedDaemonPod event).
	failed []*corev1.Pod
}

func (a actions) empty() bool { return len(a.create) == 0 && len(a.delete) == 0 }

// manage is upstream's manage: a pod for every eligible node that has
// none, away with the pods of nodes that are gone or no longer eligible,
// with failed or finished pods, and with the extra pods of a node (the
// oldest stays; when surging, the oldest of the current revision and the
// oldest of the others). At most burst creations.
func (w *world) manage(burst int) actions {
	var a actions
	known := make(map[string]bool, len(w.nodes))
	surge := allowsSurge(w.ds)
	for _, node := range w.nodes {
		known[node.Name] = true
		shouldRun, shouldContinue := w.elig.check(node)
		pods := w.byNode[node.Name]
		switch {
		case shouldRun && len(pods) == 0:
			a.create = append(a.create, node.Name)
		case shouldContinue:
			var running []*corev1.Pod
			for _, p := range pods {
				switch {
				case p.DeletionTimestamp != nil:
				case p.Status.Phase == corev1.PodFailed:
					a.delete = append(a.delete, p)
					a.failed = append(a.failed, p)
				case p.Status.Phase == corev1.PodSucceeded:
					a.delete = append(a.delete, p)
				default:
					running = append(running, p)
				}
			}
			a.delete = append(a.delete, extraPods(running, surge, w.hash)...)
		case len(pods) > 0:
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					a.delete = append(a.delete, p)
				}
			}
		}
	}
	// Pods for nodes that are gone (or for no node at all).
	for name, pods := range w.byNode {
		if known[name] {
			continue
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				a.delete = append(a.delete, p)
			}
		}
	}
	slices.SortFunc(a.delete, byName)
	if len(a.create) > burst {
		a.create = a.create[:burst]
	}
	return a
}

// extraPods are the running pods of one node (oldest first) beyond the
// one it keeps, or, when surging, beyond the oldest of the current
// revision and the oldest of any other.
func extraPods(running []*corev1.Pod, surge bool, hash string) []*corev1.Pod {
	if !surge {
		if len(running) <= 1 {
			return nil
		}
		return running[1:]
	}
	var out []*corev1.Pod
	var haveNew, haveOld bool
	for _, p := range running {
		if isUpdated(p, hash) {
			if !haveNew {
				haveNew = true
				continue
			}
		} else if !haveOld {
			haveOld = true
			continue
		}
		out = append(out, p)
	}
	return out
}

// rollingUpdate is upstream's rollingUpdate, run once manage has nothing
// to do. Without surge it deletes old pods, as many as keeps the
// unavailable nodes within maxUnavailable (unavailable old pods always go),
// and manage replaces them on a later sync. With surge it creates the new
// pod beside the old one on up to maxSurge nodes at a time (at once where
// the old pod is unavailable), and deletes the old pod once the new one is
// available.
func (w *world) rollingUpdate() actions {
	maxSurge, maxUnavailable, _ := w.updateBudget()
	names := make([]string, 0, len(w.nodes))
	nodes := make(map[string]*corev1.Node, len(w.nodes))
	for _, n := range w.nodes {
		nodes[n.Name] = n
		if run, _ := w.elig.check(n); run || len(w.byNode[n.Name]) > 0 {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	minReady := w.ds.Spec.MinReadySeconds
	var a actions
	if maxSurge == 0 {
		unavailable := 0
		var replace, candidates []*corev1.Pod
		for _, name := range names {
			newPod, oldPod, ok := updatedPodsOn(w.byNode[name], w.hash)
			switch {
			case !ok, oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				// manage sorts the node out; it counts as unavailable
				unavailable++
			case newPod != nil:
				if !isAvailable(newPod, minReady, w.now) {
					unavailable++
				}
			case !isAvailable(oldPod, minReady, w.now):
				replace = append(replace, oldPod)
			case unavailable < maxUnavailable:
				candidates = append(candidates, oldPod)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		a.delete = append(replace, candidates[:room]...)
		return a
	}
	surged := 0
	var allowed, candidates []string
	for _, name := range names {
		newPod, oldPod, ok := updatedPodsOn(w.byNode[name], w.hash)
		if !ok || oldPod == nil {
			continue
		}
		if newPod != nil {
			if !isAvailable(newPod, minReady, w.now) {
				surged++ // waiting for it to become available
				continue
			}
			a.delete = append(a.delete, oldPod)
			continue
		}
		run, _ := w.elig.check(nodes[name])
		switch {
		case !isAvailable(oldPod, minReady, w.now):
			if !run {
				a.delete = append(a.delete, oldPod)
				continue
			}
			allowed = append(allowed, name)
		case surged >= maxSurge:
		case run:
			candidates = append(candidates, name)
		}
	}
	room := min(max(maxSurge-surged, 0), len(candidates))
	a.create = append(allowed, candidates[:room]...)
	return a
}

// updateBudget returns maxSurge and maxUnavailable scaled to the number of
// nodes that should run the pod (rounding up, as upstream; both zero means
// one unavailable), and that number.
func (w *world) updateBudget() (maxSurge, maxUnavailable, desired int) {
	for _, n := range w.nodes {
		if run, _ := w.elig.check(n); run {
			desired++
		}
	}
	ru := w.ds.Spec.UpdateStrategy.RollingUpdate
	if ru != nil {
		if ru.MaxSurge != nil {
			maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		} else if ru.MaxSurge == nil {
			maxUnavailable = 1
		}
	} else {
		maxUnavailable = 1
	}
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, desired
}

// allowsSurge says whether the DaemonSet rolls out by surging.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return false
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 100, true)
	return err == nil && v > 0
}

// updatedPodsOn returns the node's pod of the current revision and its
// other pod, ignoring terminating pods; ok is false when the node has two
// of either (manage cleans that up first).
func updatedPodsOn(pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(p, hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// isUpdated says whether p is of the revision with hash.
func isUpdated(p *corev1.Pod, hash string) bool {
	return hash != "" && p.Labels[history.ControllerRevisionHashLabel] == hash
}

// readySince returns when a ready pod became ready (false: not ready).
func readySince(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// isAvailable says whether p has been ready for minReadySeconds at now.
func isAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	since, ready := readySince(p)
	if !ready {
		return false
	}
	return minReadySeconds <= 0 || !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// olderFirst orders a node's pods as upstream: bound before unbound, then
// older first, then by name.
func olderFirst(a, b *corev1.Pod) int {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		if a.Spec.NodeName != "" {
			return -1
		}
		return 1
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func byName(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
