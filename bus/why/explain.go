package why

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
)

// LogFunc returns the last lines of a container's log (its previous run
// when previous is set); nil when logs are not wanted.
type LogFunc func(namespace, pod, container string, previous bool) (string, error)

// explainer holds what one Explain call works with.
type explainer struct {
	w    *World
	logs LogFunc
}

// Explain answers why t is where it is, from w alone (and logs, for a
// crashing container's last lines).
func Explain(w *World, t Target, logs LogFunc) Report {
	e := explainer{w: w, logs: logs}
	r := Report{Target: t, Kind: kindOf(t), Revision: w.Revision, Slowest: -1}
	h := w.Get(targetKey(t))
	if h.Latest() == nil {
		r.Summary = fmt.Sprintf("%s %s: the bus holds no revision of it", r.Kind, displayName(t.Namespace, t.Name))
		r.Stops = []Finding{{Cause: "NotFound", Object: objectRef(r.Kind, t.Name),
			Message: "no such object in the bus's history (it never existed, was deleted more than the retention ago, or the name is wrong)"}}
		r.Notes = e.notes()
		return r
	}
	r.Found = true
	switch {
	case t.Group == "apps" && t.Resource == "deployments":
		e.deployment(&r, h)
	case t.Group == "apps" && t.Resource == "replicasets":
		e.replicaSet(&r, h)
	case t.Group == "" && t.Resource == "pods":
		e.pod(&r, h)
	case t.Group == "" && t.Resource == "services":
		e.service(&r, h)
	case t.Group == "" && t.Resource == "namespaces":
		e.namespace(&r, h)
	default:
		e.generic(&r, h)
	}
	if h.Deleted() {
		l := h.Latest()
		r.Stops = append([]Finding{{Cause: "Deleted", Object: objectRef(r.Kind, t.Name),
			Message: fmt.Sprintf("deleted at revision %d by %s", l.Revision, l.Who)}}, r.Stops...)
	}
	r.finishChain()
	r.Notes = e.notes()
	return r
}

func (e *explainer) notes() []string {
	var out []string
	for _, g := range e.w.Gaps {
		out = append(out, fmt.Sprintf("the bus never carried revisions %d..%d: steps in them may be missing", g[0], g[1]))
	}
	for _, h := range e.w.Hidden {
		out = append(out, "not read: "+h)
	}
	return out
}

// kindOf names the kind of a resource why knows, else the resource.
func kindOf(t Target) string {
	known := map[string]string{"deployments": "Deployment", "replicasets": "ReplicaSet", "pods": "Pod", "services": "Service",
		"namespaces": "Namespace", "nodes": "Node", "configmaps": "ConfigMap", "secrets": "Secret", "statefulsets": "StatefulSet",
		"daemonsets": "DaemonSet", "jobs": "Job", "cronjobs": "CronJob", "persistentvolumeclaims": "PersistentVolumeClaim",
		"endpointslices": "EndpointSlice", "serviceaccounts": "ServiceAccount", "resourcequotas": "ResourceQuota"}
	if k, ok := known[t.Resource]; ok {
		return k
	}
	return t.Resource
}

func displayName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func objectRef(kind, name string) string { return strings.ToLower(kind) + "/" + name }

// firstLink is the link of an object's creation: its first ADDED revision
// (or its first revision when the bus holds no ADDED).
func firstLink(h *History, kind, name, stage string) Link {
	r := h.Revs[0]
	return Link{Step: fmt.Sprintf("%s %s created", strings.ToLower(kind), name), Stage: stage, Object: objectRef(kind, name),
		Revision: r.Revision, Time: r.Time, Who: r.Who}
}

// controlledBy lists the histories of resource in ns whose controller
// owner reference is uid, oldest first.
func (e *explainer) controlledBy(group, resource, ns string, uid types.UID) []*History {
	var out []*History
	for _, h := range e.w.Resource(group, resource, ns) {
		m, ok := decode[metav1.PartialObjectMetadata](h.Revs[len(h.Revs)-1].Object)
		if !ok {
			continue
		}
		if c := metav1.GetControllerOfNoCopy(m); c != nil && c.UID == uid {
			out = append(out, h)
		}
	}
	return out
}

// ---- Deployments and ReplicaSets ----

func (e *explainer) deployment(r *Report, h *History) {
	d, _, ok := latest[appsv1.Deployment](h)
	if !ok {
		d, _ = decode[appsv1.Deployment](h.Latest().Object)
	}
	if d == nil {
		return
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	r.Summary = fmt.Sprintf("Deployment %s: %d/%d ready, %d up-to-date, %d available", displayName(d.Namespace, d.Name),
		st.ReadyReplicas, want, st.UpdatedReplicas, st.AvailableReplicas)
	r.Chain = append(r.Chain, firstLink(h, "Deployment", d.Name, "owner"))
	sets := e.controlledBy("apps", "replicasets", d.Namespace, d.UID)
	newest := newestReplicaSet(sets, d)
	if newest == nil {
		if !h.Deleted() {
			r.Stops = append(r.Stops, Finding{Cause: "RolloutProgressing", Object: objectRef("Deployment", d.Name),
				Message: "no ReplicaSet of this Deployment is on the bus yet: the controller-manager has not acted on it"})
		}
		return
	}
	rs, _ := decode[appsv1.ReplicaSet](newest.Latest().Object)
	r.Chain = append(r.Chain, firstLink(newest, "ReplicaSet", rs.Name, "owner"))
	podFindings := e.replicaSetFindings(r, newest, rs)
	if cond := deploymentCondition(d, appsv1.DeploymentProgressing); cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == "ProgressDeadlineExceeded" {
		unavailable := st.UnavailableReplicas
		deadline := int32(600)
		if d.Spec.ProgressDeadlineSeconds != nil {
			deadline = *d.Spec.ProgressDeadlineSeconds
		}
		r.Stops = append(r.Stops, Finding{Cause: "RolloutStalled", Object: objectRef("Deployment", d.Name),
			Message: fmt.Sprintf("the rollout stalled: ReplicaSet %s made no progress for %ds (progressDeadlineSeconds); %d replica(s) unavailable",
				rs.Name, deadline, unavailable),
			Evidence: []string{fmt.Sprintf("condition Progressing=False reason %s since %s: %s", cond.Reason, cond.LastTransitionTime.UTC().Format(time.RFC3339), cond.Message)}})
	} else if st.AvailableReplicas < want || st.UpdatedReplicas < want {
		if len(podFindings) == 0 {
			r.Stops = append(r.Stops, Finding{Cause: "RolloutProgressing", Object: objectRef("Deployment", d.Name),
				Message: fmt.Sprintf("the rollout is in progress: %d/%d up-to-date, %d available", st.UpdatedReplicas, want, st.AvailableReplicas)})
		}
	}
	r.Stops = append(r.Stops, podFindings...)
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// newestReplicaSet is the ReplicaSet of d's current template: the one with
// the highest deployment.kubernetes.io/revision, else the newest.
func newestReplicaSet(sets []*History, d *appsv1.Deployment) *History {
	var best *History
	var bestRev string
	for _, h := range sets {
		if h.Deleted() {
			continue
		}
		rs, ok := decode[appsv1.ReplicaSet](h.Latest().Object)
		if !ok {
			continue
		}
		rev := rs.Annotations["deployment.kubernetes.io/revision"]
		if best == nil || len(rev) > len(bestRev) || (len(rev) == len(bestRev) && rev >= bestRev) {
			best, bestRev = h, rev
		}
	}
	return best
}

func (e *explainer) replicaSet(r *Report, h *History) {
	rs, ok := decode[appsv1.ReplicaSet](h.Latest().Object)
	if !ok {
		return
	}
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	r.Summary = fmt.Sprintf("ReplicaSet %s: %d/%d ready, %d available", displayName(rs.Namespace, rs.Name), rs.Status.ReadyReplicas, want, rs.Status.AvailableReplicas)
	r.Chain = append(r.Chain, firstLink(h, "ReplicaSet", rs.Name, "owner"))
	r.Stops = append(r.Stops, e.replicaSetFindings(r, h, rs)...)
}

// replicaSetFindings appends to r's chain the way of rs's critical pod
// (the last to become ready, or the one that got least far) and returns
// why rs's pods are not all ready.
func (e *explainer) replicaSetFindings(r *Report, h *History, rs *appsv1.ReplicaSet) []Finding {
	var out []Finding
	if c := replicaSetFailure(rs); c != nil {
		out = append(out, createRefused(rs, c.Message, e.quotaEvidence(rs.Namespace, c.Message)))
	} else if msg := e.lastEvent(rs.Namespace, "ReplicaSet", rs.Name, rs.UID, "FailedCreate"); msg != "" && rs.Status.Replicas < ptrOr(rs.Spec.Replicas, 1) {
		out = append(out, createRefused(rs, msg, e.quotaEvidence(rs.Namespace, msg)))
	}
	pods := e.controlledBy("", "pods", rs.Namespace, rs.UID)
	critical, _ := e.criticalPod(pods)
	if critical != nil {
		r.Chain = append(r.Chain, e.podChain(critical)...)
	}
	seen := map[string]int{}
	for _, ph := range pods {
		if ph.Deleted() {
			continue
		}
		for _, f := range e.podFindings(ph) {
			key := f.Cause + "\x00" + stripNames(f.Message, ph.Key.Name)
			if i, ok := seen[key]; ok {
				out[i].Evidence = appendOnce(out[i].Evidence, "also pod "+ph.Key.Name)
				continue
			}
			seen[key] = len(out)
			out = append(out, f)
		}
	}
	return out
}

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func stripNames(msg, name string) string { return strings.ReplaceAll(msg, name, "") }

func replicaSetFailure(rs *appsv1.ReplicaSet) *appsv1.ReplicaSetCondition {
	for i := range rs.Status.Conditions {
		c := &rs.Status.Conditions[i]
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func createRefused(rs *appsv1.ReplicaSet, msg string, evidence []string) Finding {
	f := Finding{Cause: "CreateRefused", Object: objectRef("ReplicaSet", rs.Name),
		Message: "the API server refuses to create its pods: " + msg, Evidence: evidence}
	if strings.Contains(msg, "exceeded quota") {
		f.Cause = "QuotaExceeded"
		f.Message = "its pods are refused by a ResourceQuota: " + msg
	}
	return f
}

// quotaEvidence describes the namespace's quotas when msg is a quota
// refusal.
func (e *explainer) quotaEvidence(ns, msg string) []string {
	if !strings.Contains(msg, "exceeded quota") {
		return nil
	}
	var out []string
	for _, h := range e.w.Resource("", "resourcequotas", ns) {
		q, _, ok := latest[corev1.ResourceQuota](h)
		if !ok {
			continue
		}
		var parts []string
		for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
			for k := range q.Status.Hard {
				if !yield(k) {
					return
				}
			}
		}) {
			used := q.Status.Used[name]
			hard := q.Status.Hard[name]
			parts = append(parts, fmt.Sprintf("%s %s/%s", name, used.String(), hard.String()))
		}
		out = append(out, fmt.Sprintf("resourcequota %s: used/hard %s", q.Name, strings.Join(parts, ", ")))
	}
	return out
}

// criticalPod picks the pod whose way sets the pace: among pods not
// ready, the one that got least far (the oldest of those); when all are
// ready, the last to become ready.
func (e *explainer) criticalPod(pods []*History) (*History, bool) {
	var worst, lastReady *History
	worstStep, lastReadyAt := len(lifecycle.Steps), time.Time{}
	for _, h := range pods {
		if h.Deleted() {
			continue
		}
		times, _ := podTimes(h)
		if at, ok := times[lifecycle.Ready]; ok && stillReady(h) {
			if lastReady == nil || at.After(lastReadyAt) {
				lastReady, lastReadyAt = h, at
			}
			continue
		}
		reached := 0
		for i, s := range lifecycle.PodSteps {
			if _, ok := times[s]; ok {
				reached = i
			}
		}
		if worst == nil || reached < worstStep {
			worst, worstStep = h, reached
		}
	}
	if worst != nil {
		return worst, false
	}
	return lastReady, lastReady != nil
}

func stillReady(h *History) bool {
	p, _, ok := latest[corev1.Pod](h)
	if !ok {
		return false
	}
	reached := lifecycle.PodReached(p)
	return len(reached) == len(lifecycle.PodSteps)
}

// ---- Pods ----

// stepRev is when a pod step first happened.
type stepRev struct {
	Rev
	pod *corev1.Pod
}

// podTimes walks a pod's history with the lifecycle steps.
func podTimes(h *History) (lifecycle.Times, map[lifecycle.Step]stepRev) {
	times := lifecycle.Times{}
	at := map[lifecycle.Step]stepRev{}
	for _, rv := range h.Revs {
		if rv.Type == bus.Deleted {
			break
		}
		p, ok := decode[corev1.Pod](rv.Object)
		if !ok {
			continue
		}
		for _, s := range times.Observe(lifecycle.PodReached(p), rv.Time) {
			at[s] = stepRev{Rev: rv, pod: p}
		}
	}
	return times, at
}

// podChain is a pod's way from created to programmed.
func (e *explainer) podChain(h *History) []Link {
	name := h.Key.Name
	_, at := podTimes(h)
	var out []Link
	for _, s := range lifecycle.PodSteps {
		sr, ok := at[s]
		if !ok {
			break
		}
		l := Link{Stage: string(s), Object: "pod/" + name, Revision: sr.Revision, Time: sr.Time, Who: sr.Who}
		switch s {
		case lifecycle.Created:
			l.Step = "pod " + name + " created"
		case lifecycle.Scheduled:
			l.Step = "pod " + name + " bound to node " + sr.pod.Spec.NodeName
		case lifecycle.Sandbox:
			l.Step = "sandbox and network ready"
			if sr.pod.Status.PodIP != "" {
				l.Step += " (IP " + sr.pod.Status.PodIP + ")"
			}
		case lifecycle.Started:
			l.Step = "containers started"
		case lifecycle.Ready:
			l.Step = "pod ready"
		}
		out = append(out, l)
	}
	if _, ok := at[lifecycle.Ready]; !ok {
		return out
	}
	slice, sliceRev := e.inEndpoints(h.Key.Namespace, name, h.Revs[0].Revision)
	if slice == nil {
		return out
	}
	out = append(out, Link{Step: "in EndpointSlice " + slice.Key.Name, Stage: string(lifecycle.InEndpoints), Object: "endpointslice/" + slice.Key.Name,
		Revision: sliceRev.Revision, Time: sliceRev.Time, Who: sliceRev.Who})
	if l, ok := e.programmed(sliceRev.Revision); ok {
		out = append(out, l)
	}
	return out
}

// inEndpoints finds the first EndpointSlice revision after since that
// lists the pod as ready.
func (e *explainer) inEndpoints(ns, pod string, since int64) (*History, Rev) {
	var best *History
	var bestRev Rev
	for _, h := range e.w.Resource("discovery.k8s.io", "endpointslices", ns) {
		for _, rv := range h.Revs {
			if rv.Revision <= since || rv.Type == bus.Deleted || (best != nil && rv.Revision >= bestRev.Revision) {
				continue
			}
			s, ok := decode[discoveryv1.EndpointSlice](rv.Object)
			if ok && slices.Contains(lifecycle.ReadyPods(s), pod) {
				best, bestRev = h, rv
				break
			}
		}
	}
	return best, bestRev
}

// programmed finds the first proxy that programmed rules reflecting rev.
func (e *explainer) programmed(rev int64) (Link, bool) {
	var best Link
	found := false
	for _, h := range e.w.Resource("coordination.k8s.io", "leases", lifecycle.ProxyLeaseNamespace) {
		node, ok := lifecycle.ProxyNode(h.Key.Namespace, h.Key.Name)
		if !ok {
			continue
		}
		for _, rv := range h.Revs {
			l, ok := decode[coordinationv1.Lease](rv.Object)
			if !ok {
				continue
			}
			prog, at, ok := lifecycle.ReadProgrammed(l)
			if !ok || prog < rev {
				continue
			}
			if at.IsZero() {
				at = rv.Time
			}
			if !found || at.Before(best.Time) {
				best = Link{Step: "programmed by the proxy on node " + node, Stage: string(lifecycle.Programmed), Object: "lease/" + h.Key.Name,
					Revision: rv.Revision, Time: at, Who: rv.Who}
				found = true
			}
			break
		}
	}
	return best, found
}

func (e *explainer) pod(r *Report, h *History) {
	p, ok := decode[corev1.Pod](h.Latest().Object)
	if !ok {
		return
	}
	ready := 0
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	r.Summary = fmt.Sprintf("Pod %s: %s, %d/%d containers ready", displayName(p.Namespace, p.Name), p.Status.Phase, ready, len(p.Spec.Containers))
	if p.Spec.NodeName != "" {
		r.Summary += ", on node " + p.Spec.NodeName
	}
	r.Chain = append(r.Chain, e.ownerLinks(p.Namespace, p.OwnerReferences)...)
	r.Chain = append(r.Chain, e.podChain(h)...)
	sort.SliceStable(r.Chain, func(i, j int) bool { return r.Chain[i].Revision < r.Chain[j].Revision })
	if !h.Deleted() {
		r.Stops = append(r.Stops, e.podFindings(h)...)
	}
}

// ownerLinks are the creations of a pod's controller and its controller.
func (e *explainer) ownerLinks(ns string, refs []metav1.OwnerReference) []Link {
	var out []Link
	for depth := 0; depth < 3; depth++ {
		var ctrl *metav1.OwnerReference
		for i := range refs {
			if refs[i].Controller != nil && *refs[i].Controller {
				ctrl = &refs[i]
			}
		}
		if ctrl == nil {
			break
		}
		group, _, _ := strings.Cut(ctrl.APIVersion, "/")
		if !strings.Contains(ctrl.APIVersion, "/") {
			group = ""
		}
		res := strings.ToLower(ctrl.Kind) + "s"
		h := e.w.Get(bus.ObjectKey{Group: group, Resource: res, Namespace: ns, Name: ctrl.Name})
		if h.Latest() == nil {
			break
		}
		out = append([]Link{firstLink(h, ctrl.Kind, ctrl.Name, "owner")}, out...)
		m, ok := decode[metav1.PartialObjectMetadata](h.Latest().Object)
		if !ok {
			break
		}
		refs = m.OwnerReferences
	}
	return out
}

// imageReasons are the waiting reasons of an image that cannot be had.
var imageReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// podFindings says why a pod is not (yet) serving, or nothing.
func (e *explainer) podFindings(h *History) []Finding {
	p, _, ok := latest[corev1.Pod](h)
	if !ok {
		return nil
	}
	ref := "pod/" + p.Name
	if p.DeletionTimestamp != nil {
		return []Finding{e.terminating(h, "Pod", p.ObjectMeta)}
	}
	if p.Spec.NodeName == "" {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return []Finding{e.unschedulable(p, c)}
			}
		}
		return []Finding{{Cause: "Unschedulable", Object: ref, Message: "the pod is not bound to a node yet and the scheduler has not reported on it"}}
	}
	switch p.Status.Phase {
	case corev1.PodFailed:
		return []Finding{{Cause: "PodFailed", Object: ref, Message: fmt.Sprintf("the pod failed: %s %s", p.Status.Reason, p.Status.Message)}}
	case corev1.PodSucceeded:
		return nil
	}
	var out []Finding
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range p.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	for _, c := range p.Spec.Containers {
		cs, ok := statuses[c.Name]
		if !ok {
			continue
		}
		switch {
		case cs.State.Waiting != nil && imageReasons[cs.State.Waiting.Reason]:
			out = append(out, Finding{Cause: "ImagePull", Object: ref,
				Message:  fmt.Sprintf("container %s cannot start: image %q cannot be pulled (%s)", c.Name, c.Image, cs.State.Waiting.Reason),
				Evidence: nonEmpty(cs.State.Waiting.Message)})
		case crashing(cs):
			out = append(out, e.crashLoop(p, c, cs))
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "ContainerCreating" && cs.State.Waiting.Reason != "PodInitializing":
			out = append(out, Finding{Cause: "ContainerWaiting", Object: ref,
				Message: fmt.Sprintf("container %s is waiting: %s", c.Name, cs.State.Waiting.Reason), Evidence: nonEmpty(cs.State.Waiting.Message)})
		case cs.State.Running != nil && !cs.Ready && c.ReadinessProbe != nil:
			out = append(out, e.readiness(p, c, cs))
		}
	}
	if len(out) == 0 && !lifecycle.ConditionTrue(p, corev1.PodReady) {
		if w := e.lastEvent(p.Namespace, "Pod", p.Name, p.UID, ""); w != "" {
			out = append(out, Finding{Cause: "ContainerWaiting", Object: ref, Message: "the pod is not ready yet", Evidence: []string{"last event: " + w}})
		}
	}
	return out
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			out = append(out, x)
		}
	}
	return out
}

func crashing(cs corev1.ContainerStatus) bool {
	if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
		return true
	}
	if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
		return true
	}
	return cs.State.Running == nil && cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0
}

func (e *explainer) crashLoop(p *corev1.Pod, c corev1.Container, cs corev1.ContainerStatus) Finding {
	t := cs.LastTerminationState.Terminated
	previous := true
	if cs.State.Terminated != nil {
		t, previous = cs.State.Terminated, false
	}
	f := Finding{Cause: "CrashLoopBackOff", Object: "pod/" + p.Name}
	if t == nil {
		f.Message = fmt.Sprintf("container %s keeps crashing (restarted %d times)", c.Name, cs.RestartCount)
	} else {
		f.Message = fmt.Sprintf("container %s exits with code %d (%s); restarted %d times", c.Name, t.ExitCode, orDash(t.Reason), cs.RestartCount)
		if t.Message != "" {
			f.Evidence = append(f.Evidence, "termination message: "+t.Message)
		}
	}
	if e.logs != nil {
		text, err := e.logs(p.Namespace, p.Name, c.Name, previous)
		if err != nil && previous {
			text, err = e.logs(p.Namespace, p.Name, c.Name, false)
		}
		switch {
		case err != nil:
			f.Evidence = append(f.Evidence, "last log lines: unavailable ("+err.Error()+")")
		case strings.TrimSpace(text) == "":
			f.Evidence = append(f.Evidence, "last log lines: (the container wrote nothing)")
		default:
			f.Evidence = append(f.Evidence, "last log lines:")
			for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
				f.Evidence = append(f.Evidence, "  | "+line)
			}
		}
	}
	return f
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e *explainer) readiness(p *corev1.Pod, c corev1.Container, cs corev1.ContainerStatus) Finding {
	f := Finding{Cause: "ReadinessFailing", Object: "pod/" + p.Name,
		Message:  fmt.Sprintf("container %s runs but its readiness probe fails", c.Name),
		Evidence: []string{"probe: " + describeProbe(c.ReadinessProbe)}}
	if msg := e.lastEvent(p.Namespace, "Pod", p.Name, p.UID, "Unhealthy"); msg != "" {
		f.Evidence = append(f.Evidence, "last probe result: "+msg)
	}
	return f
}

func describeProbe(pr *corev1.Probe) string {
	var what string
	switch {
	case pr.HTTPGet != nil:
		what = fmt.Sprintf("http-get %s:%s%s", orDash(pr.HTTPGet.Host), pr.HTTPGet.Port.String(), pr.HTTPGet.Path)
	case pr.TCPSocket != nil:
		what = "tcp-socket :" + pr.TCPSocket.Port.String()
	case pr.Exec != nil:
		what = "exec " + strings.Join(pr.Exec.Command, " ")
	case pr.GRPC != nil:
		what = fmt.Sprintf("grpc :%d", pr.GRPC.Port)
	default:
		what = "unknown handler"
	}
	return fmt.Sprintf("%s every %ds, timeout %ds, failure threshold %d", what, orDefault(pr.PeriodSeconds, 10), orDefault(pr.TimeoutSeconds, 1), orDefault(pr.FailureThreshold, 3))
}

// lastEvent is the message of the newest Event about an object (reason
// "" for any reason), from the bus's history, so Events deleted since are
// found too.
func (e *explainer) lastEvent(ns, kind, name string, uid types.UID, reason string) string {
	var best string
	var bestRev int64
	for _, h := range e.w.Resource("", "events", ns) {
		for _, rv := range h.Revs {
			if rv.Type == bus.Deleted || rv.Revision < bestRev {
				continue
			}
			ev, ok := decode[corev1.Event](rv.Object)
			if !ok || ev.InvolvedObject.Kind != kind || ev.InvolvedObject.Name != name || (uid != "" && ev.InvolvedObject.UID != "" && ev.InvolvedObject.UID != uid) {
				continue
			}
			if reason != "" && ev.Reason != reason {
				continue
			}
			best, bestRev = fmt.Sprintf("%s: %s", ev.Reason, ev.Message), rv.Revision
			if ev.Count > 1 {
				best += fmt.Sprintf(" (x%d)", ev.Count)
			}
		}
	}
	return best
}

// orDefault is v, or d when v is unset (0), as the API's defaulting does.
func orDefault(v, d int32) int32 {
	if v <= 0 {
		return d
	}
	return v
}
