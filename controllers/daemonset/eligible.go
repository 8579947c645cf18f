package daemonset

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/kubebus/kubebus/controllers/history"
)

// Taint keys of the tolerations every DaemonSet pod gets (upstream's
// AddOrUpdateDaemonPodTolerations).
const (
	taintNotReady           = "node.kubernetes.io/not-ready"
	taintUnreachable        = "node.kubernetes.io/unreachable"
	taintDiskPressure       = "node.kubernetes.io/disk-pressure"
	taintMemoryPressure     = "node.kubernetes.io/memory-pressure"
	taintPIDPressure        = "node.kubernetes.io/pid-pressure"
	taintUnschedulable      = "node.kubernetes.io/unschedulable"
	taintNetworkUnavailable = "node.kubernetes.io/network-unavailable"
)

// addDaemonTolerations adds (or, when spec has one of the same key,
// operator and effect, overwrites) the tolerations upstream gives every
// DaemonSet pod: it stays on a node that is not ready
// or unreachable, and is placed on one under disk, memory or PID pressure
// or cordoned (and, with hostNetwork, without a pod network).
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := func(key string, effect corev1.TaintEffect) {
		t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		for i := range spec.Tolerations {
			if spec.Tolerations[i].MatchToleration(&t) {
				spec.Tolerations[i] = t // as upstream: no tolerationSeconds
				return
			}
		}
		spec.Tolerations = append(spec.Tolerations, t)
	}
	add(taintNotReady, corev1.TaintEffectNoExecute)
	add(taintUnreachable, corev1.TaintEffectNoExecute)
	add(taintDiskPressure, corev1.TaintEffectNoSchedule)
	add(taintMemoryPressure, corev1.TaintEffectNoSchedule)
	add(taintPIDPressure, corev1.TaintEffectNoSchedule)
	add(taintUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		add(taintNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// podTemplate is the template the DaemonSet's pods are made from: its own,
// with the daemon tolerations and the revision hash label.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if hash != "" {
		t.Labels[history.ControllerRevisionHashLabel] = hash
	}
	return t
}

// newPod is a pod of ds for node, made from template (podTemplate): owned
// by ds, its spec.nodeName empty and its required node affinity replaced by
// one naming node, for the scheduler to bind it there.
func newPod(ds *appsv1.DaemonSet, template *corev1.PodTemplateSpec, node string) *corev1.Pod {
	t := template.DeepCopy()
	t.Spec.Affinity = replaceNodeNameAffinity(t.Spec.Affinity, node)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: t.Spec,
	}
}

// replaceNodeNameAffinity returns affinity whose required node affinity is
// the one term matchFields metadata.name In [node], as upstream: the
// controller already checked the DaemonSet's own terms against the node.
func replaceNodeNameAffinity(affinity *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
	}}}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return affinity
}

// targetNode is the node a DaemonSet pod is for: its spec.nodeName once
// bound, else the node its matchFields metadata.name term names ("" when
// neither).
func targetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range t.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// eligibility decides which nodes a DaemonSet's pod belongs on. Build it
// once per sync (newEligibility) and ask it per node.
type eligibility struct {
	nodeName    string // the template's spec.nodeName, if any
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []corev1.Toleration
}

func newEligibility(ds *appsv1.DaemonSet) *eligibility {
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	pod := &corev1.Pod{Spec: *spec}
	return &eligibility{nodeName: spec.NodeName, affinity: nodeaffinity.GetRequiredNodeAffinity(pod), tolerations: spec.Tolerations}
}

// check returns whether a new daemon pod should run on node (shouldRun)
// and whether one already there may stay (shouldContinue), as upstream's
// NodeShouldRunDaemonPod: the node must be the template's nodeName if it
// names one and match the node selector and required node affinity; a
// NoSchedule or NoExecute taint the pod does not tolerate keeps new pods
// off, and only an untolerated NoExecute one evicts a running pod.
func (e *eligibility) check(node *corev1.Node) (shouldRun, shouldContinue bool) {
	if e.nodeName != "" && e.nodeName != node.Name {
		return false, false
	}
	if ok, err := e.affinity.Match(node); err != nil || !ok {
		return false, false
	}
	if len(node.Spec.Taints) == 0 {
		return true, true
	}
	logger := klog.Background()
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, e.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false)
	if !untolerated {
		return true, true
	}
	_, evicted := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, e.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return false, !evicted
}
