package statefulset

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/history"
)

// The identity of a StatefulSet's pods: names, ordinals, labels, the
// claims of their volumes, and the predicates the plan is made of.

var kind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// ordinalName splits <parent>-<ordinal>.
var ordinalName = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal returns the set name and ordinal encoded in a pod's
// name; the ordinal is -1 when the name has none.
func parentAndOrdinal(p *corev1.Pod) (string, int) {
	m := ordinalName.FindStringSubmatch(p.Name)
	if m == nil {
		return "", -1
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 0 {
		return "", -1
	}
	return m[1], n
}

func ordinalOf(p *corev1.Pod) int {
	_, n := parentAndOrdinal(p)
	return n
}

// isMemberOf reports whether p's name makes it one of set's pods.
func isMemberOf(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	parent, n := parentAndOrdinal(p)
	return n >= 0 && parent == set.Name
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// claimName is the name of the claim of template for ordinal:
// <template>-<set>-<ordinal>.
func claimName(set *appsv1.StatefulSet, template *corev1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template.Name, set.Name, ordinal)
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicaCount(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// inRange reports whether p's ordinal is among set's desired ordinals.
func inRange(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	n, start := ordinalOf(p), startOrdinal(set)
	return n >= start && n < start+replicaCount(set)
}

func podRevision(p *corev1.Pod) string { return p.Labels[history.ControllerRevisionHashLabel] }

// identityMatches reports whether p carries the name, namespace and labels
// its ordinal gives it.
func identityMatches(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	parent, n := parentAndOrdinal(p)
	return n >= 0 && parent == set.Name && p.Name == podName(set, n) && p.Namespace == set.Namespace &&
		p.Labels[appsv1.StatefulSetPodNameLabel] == p.Name && p.Labels[appsv1.PodIndexLabel] == strconv.Itoa(n)
}

// storageMatches reports whether every claim template of set is mounted in
// p from its ordinal's claim.
func storageMatches(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	n := ordinalOf(p)
	if n < 0 {
		return false
	}
	vols := make(map[string]corev1.Volume, len(p.Spec.Volumes))
	for _, v := range p.Spec.Volumes {
		vols[v.Name] = v
	}
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		v, ok := vols[t.Name]
		if !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claimName(set, t, n) {
			return false
		}
	}
	return true
}

// claimsFor returns the claims p's ordinal needs, in template order, each
// labelled with the set's selector labels.
func claimsFor(set *appsv1.StatefulSet, ordinal int) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:        claimName(set, t, ordinal),
				Namespace:   set.Namespace,
				Labels:      maps.Clone(t.Labels),
				Annotations: maps.Clone(t.Annotations),
			},
			Spec: *t.Spec.DeepCopy(),
		}
		if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			maps.Copy(c.Labels, set.Spec.Selector.MatchLabels)
		}
		out = append(out, c)
	}
	return out
}

// updateIdentity gives p the name, namespace and labels of its ordinal.
func updateIdentity(set *appsv1.StatefulSet, p *corev1.Pod) {
	n := ordinalOf(p)
	p.Name = podName(set, n)
	p.Namespace = set.Namespace
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[appsv1.StatefulSetPodNameLabel] = p.Name
	p.Labels[appsv1.PodIndexLabel] = strconv.Itoa(n)
}

// updateStorage mounts p's claims as the volumes named after their
// templates, before p's other volumes (a template replaces a volume of the
// same name).
func updateStorage(set *appsv1.StatefulSet, p *corev1.Pod) {
	n := ordinalOf(p)
	templates := make(map[string]bool, len(set.Spec.VolumeClaimTemplates))
	vols := make([]corev1.Volume, 0, len(set.Spec.VolumeClaimTemplates)+len(p.Spec.Volumes))
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		templates[t.Name] = true
		vols = append(vols, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set, t, n)},
		}})
	}
	for _, v := range p.Spec.Volumes {
		if !templates[v.Name] {
			vols = append(vols, v)
		}
	}
	p.Spec.Volumes = vols
}

// newPod builds the pod of ordinal from set's template, labelled with
// revision: named <set>-<ordinal>, with hostname and subdomain (the
// governing Service) giving it a stable DNS name, and its claims mounted.
func newPod(set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName(set, ordinal),
			Namespace:       set.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)},
		},
		Spec: t.Spec,
	}
	updateIdentity(set, p)
	p.Spec.Hostname = p.Name
	p.Spec.Subdomain = set.Spec.ServiceName
	updateStorage(set, p)
	if revision != "" {
		p.Labels[history.ControllerRevisionHashLabel] = revision
	}
	return p
}

// isCreated reports whether p exists in the API (it has a phase), rather
// than being built by this sync.
func isCreated(p *corev1.Pod) bool { return p.Status.Phase != "" }

func isPending(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending }

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

func isTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isRunningAndReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return p.Status.Phase == corev1.PodRunning && c != nil && c.Status == corev1.ConditionTrue
}

// isAvailable reports whether p has been ready for minReady at now.
func isAvailable(p *corev1.Pod, minReady int32, now time.Time) bool {
	if !isRunningAndReady(p) {
		return false
	}
	if minReady <= 0 {
		return true
	}
	c := readyCondition(p)
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(time.Duration(minReady)*time.Second).After(now)
}

// isHealthy: running, ready, available and not being deleted.
func isHealthy(p *corev1.Pod, minReady int32, now time.Time) bool {
	return isAvailable(p, minReady, now) && !isTerminating(p)
}
