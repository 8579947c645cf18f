package history

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

var stsKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

func parent() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-web")}}
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func revisionOf(t *testing.T, image string, n int64, cc *int32) *appsv1.ControllerRevision {
	t.Helper()
	data, err := TemplatePatch(template(image))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := NewControllerRevision(parent(), stsKind, map[string]string{"app": "web"}, data, n, cc)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestNewControllerRevision(t *testing.T) {
	t.Parallel()
	rev := revisionOf(t, "busybox:1", 3, nil)
	hash := rev.Labels[ControllerRevisionHashLabel]
	if hash == "" || rev.Name != "web-"+hash || rev.Namespace != "ns" || rev.Revision != 3 || rev.Labels["app"] != "web" {
		t.Fatalf("revision = %s/%s labels %v revision %d", rev.Namespace, rev.Name, rev.Labels, rev.Revision)
	}
	ref := metav1.GetControllerOf(rev)
	if ref == nil || ref.UID != "uid-web" || ref.Kind != "StatefulSet" || ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("controller ref = %+v", ref)
	}
	if again := revisionOf(t, "busybox:1", 4, nil); again.Name != rev.Name {
		t.Fatalf("same template, different names %s and %s", rev.Name, again.Name)
	}
	if other := revisionOf(t, "busybox:2", 3, nil); other.Name == rev.Name {
		t.Fatalf("different templates share the name %s", rev.Name)
	}
	one := int32(1)
	if probed := revisionOf(t, "busybox:1", 3, &one); probed.Name == rev.Name {
		t.Fatalf("the collision count does not change the name %s", rev.Name)
	}
	if strings.ContainsAny(hash, "aeiou") {
		t.Fatalf("hash %q is not rendered in the safe alphabet", hash)
	}
}

func TestControllerRevisionNameTruncates(t *testing.T) {
	t.Parallel()
	if got := ControllerRevisionName(strings.Repeat("a", 300), "h"); len(got) != maxPrefixLen+2 {
		t.Fatalf("len = %d", len(got))
	}
}

func TestEqualRevision(t *testing.T) {
	t.Parallel()
	a, b, c := revisionOf(t, "x", 1, nil), revisionOf(t, "x", 2, nil), revisionOf(t, "y", 1, nil)
	relabelled := a.DeepCopy()
	relabelled.Labels[ControllerRevisionHashLabel] = "other"
	unlabelled := a.DeepCopy()
	delete(unlabelled.Labels, ControllerRevisionHashLabel)
	for _, tc := range []struct {
		name string
		l, r *appsv1.ControllerRevision
		want bool
	}{
		{"same data", a, b, true},
		{"different data", a, c, false},
		{"hash labels differ", a, relabelled, false},
		{"one unlabelled", a, unlabelled, true},
		{"nil and nil", nil, nil, true},
		{"nil and one", nil, a, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EqualRevision(tc.l, tc.r); got != tc.want {
				t.Fatalf("EqualRevision = %v", got)
			}
		})
	}
	if got := FindEqualRevisions([]*appsv1.ControllerRevision{a, c, b}, a); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("FindEqualRevisions = %v", got)
	}
}

func TestSortAndNext(t *testing.T) {
	t.Parallel()
	now := time.Now()
	mk := func(name string, n int64, age time.Duration) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}, Revision: n}
	}
	revs := []*appsv1.ControllerRevision{mk("d", 3, 0), mk("c", 1, time.Minute), mk("b", 1, time.Minute), mk("a", 1, 0), mk("e", 2, time.Hour)}
	SortControllerRevisions(revs)
	var got []string
	for _, r := range revs {
		got = append(got, r.Name)
	}
	if strings.Join(got, "") != "bcaed" {
		t.Fatalf("order = %v", got)
	}
	if n := NextRevision(revs); n != 4 {
		t.Fatalf("NextRevision = %d", n)
	}
	if n := NextRevision(nil); n != 1 {
		t.Fatalf("NextRevision(nil) = %d", n)
	}
}

func TestTemplatePatchRoundTrip(t *testing.T) {
	t.Parallel()
	data, err := TemplatePatch(template("busybox:1"))
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data.Raw, &shape); err != nil || shape.Spec.Template["$patch"] != "replace" {
		t.Fatalf("patch %s: %v", data.Raw, err)
	}
	// Applied to a different template it gives back the recorded one,
	// dropping what the recorded one lacks.
	cur := template("busybox:2")
	cur.Spec.Containers = append(cur.Spec.Containers, corev1.Container{Name: "sidecar", Image: "s"})
	cur.Labels["extra"] = "1"
	got, err := ApplyTemplatePatch(cur, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Containers) != 1 || got.Spec.Containers[0].Image != "busybox:1" || got.Labels["extra"] != "" {
		t.Fatalf("restored template = %+v", got)
	}
	again, _ := TemplatePatch(template("busybox:1"))
	if string(again.Raw) != string(data.Raw) {
		t.Fatal("TemplatePatch is not deterministic")
	}
}

func TestCreateControllerRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := fake.NewClientset()
	c := NewClient(cs)
	p := parent()
	var cc int32
	rev := revisionOf(t, "busybox:1", 1, &cc)

	created, err := CreateControllerRevision(ctx, c, p, rev, &cc)
	if err != nil || cc != 0 || created.Name != rev.Name {
		t.Fatalf("create = %v, %v, collisions %d", created, err, cc)
	}
	// The same data again: the existing revision comes back.
	again, err := CreateControllerRevision(ctx, c, p, rev, &cc)
	if err != nil || cc != 0 || again.Name != rev.Name {
		t.Fatalf("create again = %v, %v, collisions %d", again, err, cc)
	}
	// Another revision's name already taken by different data: a collision.
	next := revisionOf(t, "busybox:2", 2, &cc)
	squatter := next.DeepCopy()
	squatter.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}
	if _, err := c.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	got, err := CreateControllerRevision(ctx, c, p, next, &cc)
	if err != nil || cc != 1 || got.Name == next.Name || string(got.Data.Raw) != string(next.Data.Raw) {
		t.Fatalf("collision: %v, %v, collisions %d", got, err, cc)
	}
	if got.Labels[ControllerRevisionHashLabel] != strings.TrimPrefix(got.Name, "web-") {
		t.Fatalf("hash label %q does not match name %q", got.Labels[ControllerRevisionHashLabel], got.Name)
	}
	if _, err := CreateControllerRevision(ctx, c, p, rev, nil); err == nil {
		t.Fatal("nil collisionCount accepted")
	}
}

func TestUpdateAdoptRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := fake.NewClientset()
	c := NewClient(cs)
	p := parent()
	orphan := revisionOf(t, "x", 1, nil)
	orphan.OwnerReferences = nil
	orphan, err := c.Create(ctx, orphan)
	if err != nil {
		t.Fatal(err)
	}
	adopted, err := Adopt(ctx, c, p, stsKind, orphan)
	if err != nil || metav1.GetControllerOf(adopted) == nil || metav1.GetControllerOf(adopted).UID != p.UID {
		t.Fatalf("adopt = %v, %v", adopted, err)
	}
	other := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "uid-db"}}
	if _, err := Adopt(ctx, c, other, stsKind, adopted); err == nil {
		t.Fatal("adopted a revision another set controls")
	}
	renumbered, err := UpdateRevision(ctx, c, adopted, 7)
	if err != nil || renumbered.Revision != 7 {
		t.Fatalf("renumber = %v, %v", renumbered, err)
	}
	if err := Release(ctx, c, p, renumbered); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "ns", renumbered.Name)
	if err != nil || len(got.OwnerReferences) != 0 {
		t.Fatalf("released = %v, %v", got, err)
	}
	if err := c.Delete(ctx, "ns", got.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "ns", got.Name); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}
