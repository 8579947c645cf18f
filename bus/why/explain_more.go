package why

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/bus/tap"
)

// ---- scheduling ----

var reasonCountRE = regexp.MustCompile(`(\d+) ([^,]+)`)

// unschedulable explains a PodScheduled=False condition: the scheduler's
// counts per filter reason, and the node that came closest.
func (e *explainer) unschedulable(p *corev1.Pod, c corev1.PodCondition) Finding {
	f := Finding{Cause: "Unschedulable", Object: "pod/" + p.Name,
		Message: "no node can take the pod: " + c.Message}
	if c.Reason == corev1.PodReasonSchedulingGated {
		f.Message = "the pod waits for its scheduling gates to be removed: " + c.Message
		return f
	}
	if _, rest, ok := strings.Cut(c.Message, "are available: "); ok {
		rest, _, _ = strings.Cut(rest, ". ")
		rest = strings.TrimSuffix(rest, ".")
		for _, m := range reasonCountRE.FindAllStringSubmatch(rest, -1) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s node(s): %s", m[1], strings.TrimSpace(m[2])))
		}
	}
	if closest := e.closestNode(p); closest != "" {
		f.Evidence = append(f.Evidence, closest)
	}
	return f
}

// nodeFit is how far one node is from taking a pod.
type nodeFit struct {
	name  string
	fails []string
	// shortfall weighs the failures: each resource counts missing/requested
	// (a node almost big enough is close), anything else counts 1.
	shortfall float64
}

// closestNode names the node that came closest to taking p, judged from
// the nodes and the pods bound to them on the bus.
func (e *explainer) closestNode(p *corev1.Pod) string {
	used := map[string]corev1.ResourceList{}
	counts := map[string]int64{}
	for _, h := range e.w.Resource("", "pods", "") {
		q, _, ok := latest[corev1.Pod](h)
		if !ok || q.Spec.NodeName == "" || q.Status.Phase == corev1.PodSucceeded || q.Status.Phase == corev1.PodFailed {
			continue
		}
		counts[q.Spec.NodeName]++
		sum := used[q.Spec.NodeName]
		if sum == nil {
			sum = corev1.ResourceList{}
			used[q.Spec.NodeName] = sum
		}
		for k, v := range resourcehelper.PodRequests(q, resourcehelper.PodResourcesOptions{}) {
			cur := sum[k]
			cur.Add(v)
			sum[k] = cur
		}
	}
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	var fits []nodeFit
	for _, h := range e.w.Resource("", "nodes", "") {
		n, _, ok := latest[corev1.Node](h)
		if !ok {
			continue
		}
		nf := nodeFit{name: n.Name}
		if n.Spec.Unschedulable {
			nf.fails = append(nf.fails, "cordoned (unschedulable)")
			nf.shortfall++
		}
		if t, bad := schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); bad {
			nf.fails = append(nf.fails, "untolerated taint "+t.ToString())
			nf.shortfall++
		}
		if ok, _ := affinity.Match(n); !ok {
			nf.fails = append(nf.fails, "does not match the pod's node selector or affinity")
			nf.shortfall++
		}
		for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
			for k := range req {
				if !yield(k) {
					return
				}
			}
		}) {
			want := req[name]
			if want.IsZero() {
				continue
			}
			free := n.Status.Allocatable[name].DeepCopy()
			u := used[n.Name][name]
			free.Sub(u)
			if want.Cmp(free) > 0 {
				missing := want.DeepCopy()
				missing.Sub(free)
				nf.fails = append(nf.fails, fmt.Sprintf("short of %s %s (requests %s, %s free)", quantity(missing), name, quantity(want), quantity(free)))
				nf.shortfall += missing.AsApproximateFloat64() / want.AsApproximateFloat64()
			}
		}
		if maxPods, ok := n.Status.Allocatable[corev1.ResourcePods]; ok && counts[n.Name] >= maxPods.Value() {
			nf.fails = append(nf.fails, fmt.Sprintf("full (%d pods)", counts[n.Name]))
			nf.shortfall++
		}
		fits = append(fits, nf)
	}
	if len(fits) == 0 {
		return ""
	}
	sort.SliceStable(fits, func(i, j int) bool {
		if len(fits[i].fails) != len(fits[j].fails) {
			return len(fits[i].fails) < len(fits[j].fails)
		}
		if fits[i].shortfall != fits[j].shortfall {
			return fits[i].shortfall < fits[j].shortfall
		}
		return fits[i].name < fits[j].name
	})
	best := fits[0]
	if len(best.fails) == 0 {
		return fmt.Sprintf("node %s looks able to take it now; the scheduler retries unschedulable pods when the cluster changes", best.name)
	}
	return fmt.Sprintf("closest node: %s (%s)", best.name, strings.Join(best.fails, "; "))
}

func quantity(q resource.Quantity) string {
	if q.Sign() < 0 {
		return "0"
	}
	return q.String()
}

// ---- terminating ----

// terminating explains an object whose deletion waits on finalizers: which
// ones, and who added each (the writer of the revision it appeared in).
func (e *explainer) terminating(h *History, kind string, m metav1.ObjectMeta) Finding {
	f := Finding{Cause: "StuckTerminating", Object: objectRef(kind, m.Name)}
	since := ""
	if m.DeletionTimestamp != nil {
		since = " since " + m.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z")
	}
	if len(m.Finalizers) == 0 {
		f.Message = fmt.Sprintf("deletion requested%s; waiting for the grace period or the node to confirm", since)
		return f
	}
	f.Message = fmt.Sprintf("deletion requested%s, but it waits for finalizer(s) %s", since, strings.Join(m.Finalizers, ", "))
	for _, fin := range m.Finalizers {
		f.Evidence = append(f.Evidence, finalizerOrigin(h, fin))
	}
	return f
}

// finalizerOrigin says who added a finalizer, from the object's history.
func finalizerOrigin(h *History, fin string) string {
	for _, rv := range h.Revs {
		m, ok := decode[metav1.PartialObjectMetadata](rv.Object)
		if ok && slices.Contains(m.Finalizers, fin) {
			owner := "a controller that handles " + fin
			if rv.Who != "-" {
				owner = rv.Who
			}
			return fmt.Sprintf("finalizer %s was added at revision %d by %s; that writer (or the controller owning %s) must remove it", fin, rv.Revision, owner, fin)
		}
	}
	return fmt.Sprintf("finalizer %s was already there when the bus's history starts", fin)
}

func (e *explainer) generic(r *Report, h *History) {
	m, ok := decode[metav1.PartialObjectMetadata](h.Latest().Object)
	if !ok {
		return
	}
	r.Summary = fmt.Sprintf("%s %s: %d revision(s) on the bus, last at %d by %s", r.Kind, displayName(m.Namespace, m.Name), len(h.Revs), h.Latest().Revision, h.Latest().Who)
	r.Chain = append(r.Chain, firstLink(h, r.Kind, m.Name, "created"))
	if l, ok := deletionLink(h, r.Kind, m.Name); ok {
		r.Chain = append(r.Chain, l)
	}
	if m.DeletionTimestamp != nil && !h.Deleted() {
		r.Stops = append(r.Stops, e.terminating(h, r.Kind, m.ObjectMeta))
	}
}

// deletionLink is the revision that asked for an object's deletion.
func deletionLink(h *History, kind, name string) (Link, bool) {
	for _, rv := range h.Revs {
		m, ok := decode[metav1.PartialObjectMetadata](rv.Object)
		if ok && m.DeletionTimestamp != nil {
			return Link{Step: fmt.Sprintf("deletion of %s %s requested", strings.ToLower(kind), name), Stage: "deleting",
				Object: objectRef(kind, name), Revision: rv.Revision, Time: rv.Time, Who: rv.Who}, true
		}
	}
	return Link{}, false
}

// ---- namespaces ----

func (e *explainer) namespace(r *Report, h *History) {
	ns, ok := decode[corev1.Namespace](h.Latest().Object)
	if !ok {
		return
	}
	r.Summary = fmt.Sprintf("Namespace %s: %s", ns.Name, ns.Status.Phase)
	r.Chain = append(r.Chain, firstLink(h, "Namespace", ns.Name, "created"))
	if l, ok := deletionLink(h, "Namespace", ns.Name); ok {
		r.Chain = append(r.Chain, l)
	}
	if ns.DeletionTimestamp == nil || h.Deleted() {
		return
	}
	f := Finding{Cause: "StuckTerminating", Object: "namespace/" + ns.Name,
		Message: "the namespace is Terminating: its contents must be deleted first"}
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			f.Evidence = append(f.Evidence, fmt.Sprintf("condition %s: %s", c.Type, c.Message))
		}
	}
	var blocked []string
	for k, oh := range e.objectsIn(ns.Name) {
		m, ok := decode[metav1.PartialObjectMetadata](oh.Latest().Object)
		if !ok || oh.Deleted() || len(m.Finalizers) == 0 {
			continue
		}
		ref := tap.ResourceName(k.Group, k.Resource) + "/" + k.Name
		line := fmt.Sprintf("%s waits for finalizer(s) %s", ref, strings.Join(m.Finalizers, ", "))
		for _, fin := range m.Finalizers {
			line += "; " + finalizerOrigin(oh, fin)
		}
		blocked = append(blocked, line)
	}
	sort.Strings(blocked)
	if len(blocked) > 0 {
		f.Message = fmt.Sprintf("the namespace is Terminating and waits for %d object(s) whose finalizers are not removed", len(blocked))
		f.Evidence = append(f.Evidence, blocked...)
	} else if len(ns.Spec.Finalizers) > 0 {
		f.Evidence = append(f.Evidence, "spec.finalizers: "+fmt.Sprint(ns.Spec.Finalizers)+" (removed by the namespace controller once the contents are gone)")
	}
	r.Stops = append(r.Stops, f)
}

// objectsIn are the histories of every object read in namespace ns.
func (e *explainer) objectsIn(ns string) map[bus.ObjectKey]*History {
	out := map[bus.ObjectKey]*History{}
	for k, h := range e.w.objects {
		if k.Namespace == ns && len(h.Revs) > 0 && !(k.Group == "" && k.Resource == "events") {
			out[k] = h
		}
	}
	return out
}

// ---- services ----

func (e *explainer) service(r *Report, h *History) {
	svc, ok := decode[corev1.Service](h.Latest().Object)
	if !ok {
		return
	}
	r.Chain = append(r.Chain, firstLink(h, "Service", svc.Name, "owner"))
	ready := map[string]bool{}
	var firstSlice *History
	var firstReady Rev
	for _, sh := range e.w.Resource("discovery.k8s.io", "endpointslices", svc.Namespace) {
		s, _, ok := latest[discoveryv1.EndpointSlice](sh)
		if !ok || s.Labels[discoveryv1.LabelServiceName] != svc.Name {
			continue
		}
		for _, p := range lifecycle.ReadyPods(s) {
			ready[p] = true
		}
		for _, rv := range sh.Revs {
			old, ok := decode[discoveryv1.EndpointSlice](rv.Object)
			if ok && rv.Type != bus.Deleted && len(lifecycle.ReadyPods(old)) > 0 && (firstSlice == nil || rv.Revision < firstReady.Revision) {
				firstSlice, firstReady = sh, rv
				break
			}
		}
	}
	r.Summary = fmt.Sprintf("Service %s: type %s, %d ready endpoint(s)", displayName(svc.Namespace, svc.Name), orType(svc.Spec.Type), len(ready))
	if firstSlice != nil {
		r.Chain = append(r.Chain, Link{Step: "first ready endpoint in EndpointSlice " + firstSlice.Key.Name, Stage: string(lifecycle.InEndpoints),
			Object: "endpointslice/" + firstSlice.Key.Name, Revision: firstReady.Revision, Time: firstReady.Time, Who: firstReady.Who})
		if l, ok := e.programmed(firstReady.Revision); ok {
			r.Chain = append(r.Chain, l)
		}
	}
	if h.Deleted() || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	ref := "service/" + svc.Name
	if len(svc.Spec.Selector) == 0 {
		if len(ready) == 0 {
			r.Stops = append(r.Stops, Finding{Cause: "NoSelector", Object: ref,
				Message: "the Service has no selector, so no controller fills its endpoints; create EndpointSlices for it by hand"})
		}
		return
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var matching, notReady []*History
	near := map[string][]string{} // key=value the selector wants otherwise -> pods
	for _, ph := range e.w.Resource("", "pods", svc.Namespace) {
		p, _, ok := latest[corev1.Pod](ph)
		if !ok {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			matching = append(matching, ph)
			if !ready[p.Name] {
				notReady = append(notReady, ph)
			}
			continue
		}
		for k := range svc.Spec.Selector {
			if v, ok := p.Labels[k]; ok {
				near[k+"="+v] = append(near[k+"="+v], p.Name)
			}
		}
	}
	switch {
	case len(matching) == 0:
		f := Finding{Cause: "SelectorMatchesNothing", Object: ref,
			Message: fmt.Sprintf("the selector %s matches no pod in namespace %s, so the Service has no endpoints", sel.String(), svc.Namespace)}
		f.Evidence = append(f.Evidence, nearMisses(svc.Spec.Selector, near, 5)...)
		if len(near) == 0 {
			f.Evidence = append(f.Evidence, "no pod in the namespace has any of the selector's label keys")
		}
		r.Stops = append(r.Stops, f)
	case len(ready) == 0:
		f := Finding{Cause: "NoReadyEndpoints", Object: ref,
			Message: fmt.Sprintf("%d pod(s) match the selector %s but none is a ready endpoint", len(matching), sel.String())}
		r.Stops = append(r.Stops, f)
		for _, ph := range notReady {
			r.Stops = append(r.Stops, e.podFindings(ph)...)
			break
		}
	}
}

func orType(t corev1.ServiceType) corev1.ServiceType {
	if t == "" {
		return corev1.ServiceTypeClusterIP
	}
	return t
}

// nearMisses describes the label values pods have where the selector wants
// others, the most similar first (a typo shows at the top).
func nearMisses(selector map[string]string, near map[string][]string, limit int) []string {
	type miss struct {
		kv   string
		dist int
		pods []string
	}
	var misses []miss
	for kv, pods := range near {
		k, v, _ := strings.Cut(kv, "=")
		misses = append(misses, miss{kv, editDistance(v, selector[k]), pods})
	}
	sort.Slice(misses, func(i, j int) bool {
		a, b := misses[i], misses[j]
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		if len(a.pods) != len(b.pods) {
			return len(a.pods) > len(b.pods)
		}
		return a.kv < b.kv
	})
	var out []string
	for i, m := range misses {
		if i == limit {
			out = append(out, fmt.Sprintf("... and %d more label value(s)", len(misses)-limit))
			break
		}
		sort.Strings(m.pods)
		out = append(out, fmt.Sprintf("%d pod(s) have %s (e.g. %s)", len(m.pods), m.kv, m.pods[0]))
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
