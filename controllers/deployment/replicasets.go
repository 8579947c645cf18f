package deployment

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations the controller keeps on Deployments and their ReplicaSets
// (kubectl rollout history and undo read them).
const (
	// RevisionAnnotation is the rollout sequence number of a ReplicaSet, and
	// on a Deployment the revision of its new ReplicaSet.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a ReplicaSet
	// served (it comes back on a rollback).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's spec.replicas when the
	// ReplicaSet was last sized: a difference means a scaling event.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas+maxSurge when the ReplicaSet was last
	// sized, the base of proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"

	rollbackToAnnotation = "deprecated.deployment.rollback.to"
	// revisionHistoryMaxChars bounds the revision-history annotation.
	revisionHistoryMaxChars = 2000
)

// annotationsNotCopied stay on the Deployment only (or on the ReplicaSet only).
var annotationsNotCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:                 true,
	RevisionHistoryAnnotation:          true,
	DesiredReplicasAnnotation:          true,
	MaxReplicasAnnotation:              true,
	rollbackToAnnotation:               true,
}

// templateHash is a short, stable name-safe hash of a pod template and the
// Deployment's collision count: the pod-template-hash label and the
// ReplicaSet name suffix. The JSON encoding of a template is deterministic
// (struct fields in order, map keys sorted).
func templateHash(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	b, err := json.Marshal(t)
	if err != nil {
		panic("deployment: a pod template does not encode: " + err.Error())
	}
	h.Write(b)
	if collisionCount != nil {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(*collisionCount)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// equalIgnoreHash compares two templates without their pod-template-hash labels.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// revision is a ReplicaSet's (or Deployment's) revision, 0 when unset.
func revision(m metav1.Object) int64 {
	v, err := strconv.ParseInt(m.GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var n int64
	for _, rs := range rss {
		n = max(n, revision(rs))
	}
	return n
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

func desired(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.Type == ""
}

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against spec.replicas; both zero would stall, so maxUnavailable is
// then 1.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	quarter := intstr.FromString("25%")
	s, u := &quarter, &quarter
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			s = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			u = ru.MaxUnavailable
		}
	}
	n := int(desired(d))
	sv, err := intstr.GetScaledValueFromIntOrPercent(s, n, true)
	if err != nil {
		sv = 0
	}
	uv, err := intstr.GetScaledValueFromIntOrPercent(u, n, false)
	if err != nil {
		uv = 0
	}
	if sv == 0 && uv == 0 {
		uv = 1
	}
	return int32(sv), int32(uv)
}

// maxSurge is how many pods above spec.replicas a rollout may run.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, _ := fenceposts(d)
	return s
}

// maxUnavailable is how many of spec.replicas may be unavailable.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || desired(d) == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, desired(d))
}

// splitReplicaSets returns the new ReplicaSet (the oldest whose template
// matches the Deployment's; nil if none) and the others.
func splitReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := slices.Clone(rss)
	slices.SortFunc(sorted, olderFirst)
	var newRS *appsv1.ReplicaSet
	old := make([]*appsv1.ReplicaSet, 0, len(sorted))
	for _, rs := range sorted {
		if newRS == nil && equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

func olderFirst(a, b *appsv1.ReplicaSet) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// activeReplicaSets are those with spec.replicas > 0 (nil entries dropped).
func activeReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func withNew(old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	all := slices.Clone(old)
	if newRS != nil {
		all = append(all, newRS)
	}
	return all
}

func sumSpec(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += replicas(rs)
	}
	return n
}

// podCeiling is how many pods the ReplicaSets may have now: a ReplicaSet
// just scaled down still has its pods until its controller reports them
// gone, so the larger of spec and status counts. Surge decisions use it, so
// that pods never exceed replicas+maxSurge while old ones are going.
func podCeiling(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += max(replicas(rs), rs.Status.Replicas)
		}
	}
	return n
}

// availableFloor is how many of a ReplicaSet's pods are surely available: a
// ReplicaSet just scaled down reports pods that are about to go, so no more
// than spec counts. Scale-down decisions use it, so that available pods
// never drop below replicas-maxUnavailable.
func availableFloor(rs *appsv1.ReplicaSet) int32 {
	if rs == nil {
		return 0
	}
	return min(rs.Status.AvailableReplicas, replicas(rs))
}

func sumStatus(rss []*appsv1.ReplicaSet, f func(appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs.Status)
		}
	}
	return n
}

func annotationInt(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// setReplicasAnnotations records the Deployment's size on rs and reports
// whether anything changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, want, maxReplicas int32) bool {
	changed := false
	for k, v := range map[string]int32{DesiredReplicasAnnotation: want, MaxReplicasAnnotation: maxReplicas} {
		s := strconv.FormatInt(int64(v), 10)
		if rs.Annotations[k] != s {
			if rs.Annotations == nil {
				rs.Annotations = map[string]string{}
			}
			rs.Annotations[k] = s
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, want, maxReplicas int32) bool {
	return setReplicasAnnotations(rs.DeepCopy(), want, maxReplicas)
}

// setNewRSAnnotations brings the new ReplicaSet's annotations up to date:
// the Deployment's own annotations, the revision (raised to newRevision,
// remembering the one it replaces in the history: that is a rollback) and,
// for a ReplicaSet about to be created, its size. It reports whether
// anything changed.
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	before := maps.Clone(rs.Annotations)
	for k, v := range d.Annotations {
		if !annotationsNotCopied[k] {
			rs.Annotations[k] = v
		}
	}
	old, hadOld := rs.Annotations[RevisionAnnotation]
	oldN, _ := strconv.ParseInt(old, 10, 64)
	if oldN < newRevision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		if hadOld && old != "" {
			rs.Annotations[RevisionHistoryAnnotation] = appendHistory(rs.Annotations[RevisionHistoryAnnotation], old)
		}
	}
	if !exists {
		setReplicasAnnotations(rs, desired(d), desired(d)+maxSurge(d))
	}
	return !maps.Equal(before, rs.Annotations)
}

// appendHistory adds a revision to a comma-separated history, dropping the
// oldest entries to stay within revisionHistoryMaxChars.
func appendHistory(history, rev string) string {
	var revs []string
	if history != "" {
		revs = strings.Split(history, ",")
	}
	revs = append(revs, rev)
	for len(revs) > 1 && len(strings.Join(revs, ",")) > revisionHistoryMaxChars {
		revs = revs[1:]
	}
	return strings.Join(revs, ",")
}

// newReplicaSet builds the new ReplicaSet for d (its size is set by the
// caller): the template with the pod-template-hash label, the selector
// narrowed by it, controlled by d.
func newReplicaSet(d *appsv1.Deployment, newRevision int64) *appsv1.ReplicaSet {
	hash := templateHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          maps.Clone(tmpl.Labels),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *tmpl},
	}
	setNewRSAnnotations(d, rs, newRevision, false)
	return rs
}

// roundHalfAway rounds to the nearest integer, halves away from zero.
func roundHalfAway(f float64) int32 { return int32(math.Round(f)) }
