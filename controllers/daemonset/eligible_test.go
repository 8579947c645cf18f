package daemonset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/history"
)

func TestEligibility(t *testing.T) {
	t.Parallel()
	tolerate := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	affinity := func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	}
	hostNetwork := func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }
	tests := []struct {
		name                      string
		ds                        *appsv1.DaemonSet
		node                      *corev1.Node
		shouldRun, shouldContinue bool
	}{
		{"plain node", testDS(), testNode("n"), true, true},
		{"node selector matches", testDS(withNodeSelector("disk", "ssd")), testNode("n", label("disk", "ssd")), true, true},
		{"node selector does not match", testDS(withNodeSelector("disk", "ssd")), testNode("n", label("disk", "hdd")), false, false},
		{"node affinity matches", testDS(affinity), testNode("n", label("zone", "a")), true, true},
		{"node affinity does not match", testDS(affinity), testNode("n", label("zone", "b")), false, false},
		{"template nodeName elsewhere", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "m" }), testNode("n"), false, false},
		{"untolerated NoSchedule: no new pod, the old stays", testDS(), testNode("n", taint("dedicated", corev1.TaintEffectNoSchedule)), false, true},
		{"untolerated NoExecute: evicted", testDS(), testNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), false, false},
		{"PreferNoSchedule is no obstacle", testDS(), testNode("n", taint("dedicated", corev1.TaintEffectPreferNoSchedule)), true, true},
		{"tolerated taint", testDS(withTolerations(tolerate("dedicated", ""))), testNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), true, true},
		{"default toleration: not-ready", testDS(), testNode("n", taint(taintNotReady, corev1.TaintEffectNoExecute)), true, true},
		{"default toleration: unreachable", testDS(), testNode("n", taint(taintUnreachable, corev1.TaintEffectNoExecute)), true, true},
		{"default toleration: unschedulable", testDS(), testNode("n", taint(taintUnschedulable, corev1.TaintEffectNoSchedule)), true, true},
		{"default toleration: pressure", testDS(), testNode("n", taint(taintDiskPressure, corev1.TaintEffectNoSchedule),
			taint(taintMemoryPressure, corev1.TaintEffectNoSchedule), taint(taintPIDPressure, corev1.TaintEffectNoSchedule)), true, true},
		{"network-unavailable without hostNetwork", testDS(), testNode("n", taint(taintNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, true},
		{"network-unavailable with hostNetwork", testDS(hostNetwork), testNode("n", taint(taintNetworkUnavailable, corev1.TaintEffectNoSchedule)), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run, cont := newEligibility(tt.ds).check(tt.node)
			if run != tt.shouldRun || cont != tt.shouldContinue {
				t.Errorf("check = %v, %v; want %v, %v", run, cont, tt.shouldRun, tt.shouldContinue)
			}
		})
	}
}

func TestNewPod(t *testing.T) {
	t.Parallel()
	ds := testDS(withTolerations(corev1.Toleration{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(5))}))
	ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}}}}}}
	p := newPod(ds, podTemplate(ds, "h1"), "n7")
	if p.Spec.NodeName != "" {
		t.Errorf("nodeName %q: the scheduler binds", p.Spec.NodeName)
	}
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Values[0] != "n7" || len(terms[0].MatchExpressions) != 0 {
		t.Errorf("affinity terms %+v, want only matchFields metadata.name In [n7]", terms)
	}
	if targetNode(p) != "n7" {
		t.Errorf("targetNode = %q", targetNode(p))
	}
	if p.Labels[history.ControllerRevisionHashLabel] != "h1" || p.Labels["app"] != "agent" {
		t.Errorf("labels %v", p.Labels)
	}
	if ds.Spec.Template.Labels[history.ControllerRevisionHashLabel] != "" || ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "other" {
		t.Error("newPod changed the DaemonSet's template")
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.UID != ds.UID || ref.Kind != "DaemonSet" || p.GenerateName != "agent-" {
		t.Errorf("owner %+v generateName %q", ref, p.GenerateName)
	}
	var keys []string
	for _, tol := range p.Spec.Tolerations {
		keys = append(keys, tol.Key+":"+string(tol.Effect))
	}
	want := []string{taintNotReady + ":NoExecute", taintUnreachable + ":NoExecute", taintDiskPressure + ":NoSchedule",
		taintMemoryPressure + ":NoSchedule", taintPIDPressure + ":NoSchedule", taintUnschedulable + ":NoSchedule"}
	if !slices.Equal(keys, want) {
		t.Errorf("tolerations %v, want %v (the template's own not-ready one in its place)", keys, want)
	}
	if p.Spec.Tolerations[0].TolerationSeconds != nil {
		t.Error("the template's not-ready toleration keeps its tolerationSeconds; upstream overwrites it")
	}
}
