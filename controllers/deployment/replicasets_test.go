package deployment

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

type depOpt func(*appsv1.Deployment)

func mkDeployment(replicas int32, image string, opts ...depOpt) *appsv1.Deployment {
	surge, unavail := intstr.FromInt32(2), intstr.FromInt32(1)
	limit, deadline := int32(10), int32(600)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(image),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			RevisionHistoryLimit:    &limit,
			ProgressDeadlineSeconds: &deadline,
		},
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

func recreate(d *appsv1.Deployment) {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
}

func surgeUnavail(s, u intstr.IntOrString) depOpt {
	return func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
	}
}

type rsOpt func(*appsv1.ReplicaSet)

// mkRS is a ReplicaSet of d with image, revision and spec replicas; its
// status says all are there and available unless changed by opts.
func mkRS(d *appsv1.Deployment, name, image string, rev string, spec int32, opts ...rsOpt) *appsv1.ReplicaSet {
	tmpl := template(image)
	hash := templateHash(&tmpl, nil)
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1, ResourceVersion: "1",
			Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
			Annotations:       map[string]string{RevisionAnnotation: rev},
			CreationTimestamp: metav1.NewTime(t0),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &spec,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
			Template: tmpl,
		},
		Status: appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: spec, AvailableReplicas: spec, ObservedGeneration: 1},
	}
	if rev == "" {
		rs.Annotations = nil
	}
	for _, o := range opts {
		o(rs)
	}
	return rs
}

func status(replicas, available int32) rsOpt {
	return func(rs *appsv1.ReplicaSet) {
		rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = replicas, available, available
	}
}

func createdAt(d time.Duration) rsOpt {
	return func(rs *appsv1.ReplicaSet) { rs.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}

func annotate(k, v string) rsOpt {
	return func(rs *appsv1.ReplicaSet) {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[k] = v
	}
}

func TestTemplateHash(t *testing.T) {
	t.Parallel()
	a, b := template("img:1"), template("img:2")
	one := int32(1)
	h := templateHash(&a, nil)
	if h != templateHash(a.DeepCopy(), nil) {
		t.Error("the hash of a copy differs")
	}
	if h == templateHash(&b, nil) {
		t.Error("different templates, same hash")
	}
	if h == templateHash(&a, &one) {
		t.Error("the collision count does not change the hash")
	}
	for _, c := range h {
		if !strings.ContainsRune("bcdfghjklmnpqrstvwxz2456789", c) {
			t.Errorf("hash %q has %q", h, c)
		}
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	t.Parallel()
	withHash := template("img:1")
	withHash.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "abc"
	noLabels := template("img:1")
	noLabels.Labels = nil
	onlyHash := template("img:1")
	onlyHash.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc"}
	tests := []struct {
		name string
		a, b corev1.PodTemplateSpec
		want bool
	}{
		{"same", template("img:1"), template("img:1"), true},
		{"hash label ignored", withHash, template("img:1"), true},
		{"image differs", template("img:1"), template("img:2"), false},
		{"only the hash label vs none", onlyHash, noLabels, true},
	}
	for _, tt := range tests {
		if got := equalIgnoreHash(&tt.a, &tt.b); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if withHash.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "abc" {
		t.Error("equalIgnoreHash changed its argument")
	}
}

func TestFenceposts(t *testing.T) {
	t.Parallel()
	pct := intstr.FromString
	num := intstr.FromInt32
	tests := []struct {
		name               string
		d                  *appsv1.Deployment
		surge, unavailable int32
	}{
		{"25% of 10", mkDeployment(10, "i", surgeUnavail(pct("25%"), pct("25%"))), 3, 2},
		{"25% of 1", mkDeployment(1, "i", surgeUnavail(pct("25%"), pct("25%"))), 1, 0},
		{"both zero: one unavailable", mkDeployment(3, "i", surgeUnavail(num(0), num(0))), 0, 1},
		{"numbers", mkDeployment(10, "i", surgeUnavail(num(2), num(1))), 2, 1},
		{"unavailable capped at replicas", mkDeployment(2, "i", surgeUnavail(num(0), num(5))), 0, 2},
		{"zero replicas", mkDeployment(0, "i"), 2, 0},
		{"recreate", mkDeployment(10, "i", recreate), 0, 0},
		{"defaults when unset", mkDeployment(8, "i", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate = nil }), 2, 2},
	}
	for _, tt := range tests {
		if s, u := maxSurge(tt.d), maxUnavailable(tt.d); s != tt.surge || u != tt.unavailable {
			t.Errorf("%s: surge %d unavailable %d, want %d %d", tt.name, s, u, tt.surge, tt.unavailable)
		}
	}
}

func TestSplitReplicaSets(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:2")
	old := mkRS(d, "a", "img:1", "1", 0)
	newer := mkRS(d, "b", "img:2", "2", 3, createdAt(time.Minute))
	dup := mkRS(d, "c", "img:2", "3", 0, createdAt(2*time.Minute))
	newRS, olds := splitReplicaSets(d, []*appsv1.ReplicaSet{dup, old, newer})
	if newRS != newer || len(olds) != 2 || olds[0] != old || olds[1] != dup {
		t.Errorf("new %v old %v", newRS.Name, names(olds))
	}
	if n, o := splitReplicaSets(mkDeployment(3, "img:9"), []*appsv1.ReplicaSet{old}); n != nil || len(o) != 1 {
		t.Errorf("no match: new %v old %v", n, o)
	}
}

func names(rss []*appsv1.ReplicaSet) []string {
	out := make([]string, len(rss))
	for i, rs := range rss {
		out[i] = rs.Name
	}
	return out
}

func TestSetNewRSAnnotations(t *testing.T) {
	t.Parallel()
	d := mkDeployment(4, "img:1")
	d.Annotations = map[string]string{
		"kubernetes.io/change-cause": "set image", corev1.LastAppliedConfigAnnotation: "{}", RevisionAnnotation: "7",
	}
	tests := []struct {
		name                 string
		rs                   *appsv1.ReplicaSet
		rev                  int64
		exists               bool
		wantRev, wantHistory string
		wantChanged          bool
	}{
		{"new", mkRS(d, "a", "img:1", "", 0), 1, false, "1", "", true},
		{"rollback bumps and remembers", mkRS(d, "a", "img:1", "2", 4), 5, true, "5", "2", true},
		{"history appends", mkRS(d, "a", "img:1", "4", 4, annotate(RevisionHistoryAnnotation, "1,2")), 6, true, "6", "1,2,4", true},
		{"up to date", mkRS(d, "a", "img:1", "3", 4, annotate("kubernetes.io/change-cause", "set image")), 3, true, "3", "", false},
		{"never lowered", mkRS(d, "a", "img:1", "9", 4, annotate("kubernetes.io/change-cause", "set image")), 3, true, "9", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			changed := setNewRSAnnotations(d, tt.rs, tt.rev, tt.exists)
			a := tt.rs.Annotations
			if changed != tt.wantChanged || a[RevisionAnnotation] != tt.wantRev || a[RevisionHistoryAnnotation] != tt.wantHistory {
				t.Errorf("changed %v, annotations %v", changed, a)
			}
			if a["kubernetes.io/change-cause"] != "set image" || a[corev1.LastAppliedConfigAnnotation] != "" {
				t.Errorf("copied annotations %v", a)
			}
			if _, ok := a[DesiredReplicasAnnotation]; ok == tt.exists {
				t.Errorf("size annotations on an existing=%v replicaset: %v", tt.exists, a)
			}
		})
	}
}

func TestAppendHistory(t *testing.T) {
	t.Parallel()
	if got := appendHistory("", "3"); got != "3" {
		t.Errorf("got %q", got)
	}
	if got := appendHistory("1,2", "3"); got != "1,2,3" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("1234567890,", 200) + "1"
	got := appendHistory(long, "99")
	if len(got) > revisionHistoryMaxChars || !strings.HasSuffix(got, ",1,99") {
		t.Errorf("bounded history: %d chars, ends %q", len(got), got[len(got)-10:])
	}
}

func TestNewReplicaSet(t *testing.T) {
	t.Parallel()
	d := mkDeployment(4, "img:1")
	d.Spec.MinReadySeconds = 5
	rs := newReplicaSet(d, 3)
	hash := templateHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash || rs.Namespace != "ns" || rs.Spec.MinReadySeconds != 5 {
		t.Errorf("replicaset %s/%s", rs.Namespace, rs.Name)
	}
	if rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("labels %v selector %v", rs.Spec.Template.Labels, rs.Spec.Selector)
	}
	if _, ok := d.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok || len(d.Spec.Selector.MatchLabels) != 1 {
		t.Error("newReplicaSet changed the deployment")
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" {
		t.Errorf("owner %+v", rs.OwnerReferences)
	}
	if rs.Annotations[RevisionAnnotation] != "3" || rs.Annotations[DesiredReplicasAnnotation] != "4" || rs.Annotations[MaxReplicasAnnotation] != "6" {
		t.Errorf("annotations %v", rs.Annotations)
	}
	one := int32(1)
	d.Status.CollisionCount = &one
	if newReplicaSet(d, 3).Name == rs.Name {
		t.Error("a collision does not change the name")
	}
}
