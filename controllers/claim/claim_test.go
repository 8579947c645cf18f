package claim

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	now    = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
)

func owner(name string, uid types.UID) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
}

type podOpt func(*corev1.Pod)

func pod(name string, app string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{"app": app}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func controlledBy(o metav1.Object) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(o, rsKind))
	}
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &now }

func names[T Object](objs []T) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestSort(t *testing.T) {
	t.Parallel()
	rs := owner("web", "web-uid")
	other := owner("other", "other-uid")
	deletingRS := rs.DeepCopy()
	deletingRS.DeletionTimestamp = &now
	elsewhere := pod("elsewhere", "web")
	elsewhere.Namespace = "other-ns"
	asOwnerOnly := pod("owner-not-controller", "web")
	asOwnerOnly.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "web-uid"}}
	all := []*corev1.Pod{
		pod("mine", "web", controlledBy(rs)),
		pod("strayed", "db", controlledBy(rs)),
		pod("mine-deleting", "web", controlledBy(rs), deleting),
		pod("orphan", "web"),
		pod("orphan-deleting", "web", deleting),
		pod("unrelated", "db"),
		pod("theirs", "web", controlledBy(other)),
		elsewhere,
		asOwnerOnly,
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})

	tests := []struct {
		name                  string
		owner                 *appsv1.ReplicaSet
		matches               func(*corev1.Pod) bool
		owned, adopt, release []string
	}{
		{"live owner", rs, Selects[*corev1.Pod](sel),
			[]string{"mine", "mine-deleting"}, []string{"orphan", "owner-not-controller"}, []string{"strayed"}},
		{"owner being deleted neither adopts nor releases", deletingRS, Selects[*corev1.Pod](sel),
			[]string{"mine", "mine-deleting"}, []string{}, []string{}},
		{"empty selector claims nothing", rs, Selects[*corev1.Pod](labels.Everything()),
			[]string{}, []string{}, []string{"mine", "strayed", "mine-deleting"}},
		{"custom matches", rs, func(p *corev1.Pod) bool { return strings.HasPrefix(p.Name, "mine") },
			[]string{"mine", "mine-deleting"}, []string{}, []string{"strayed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Sort(tt.owner, tt.matches, all)
			if got := names(p.Owned); !slices.Equal(got, tt.owned) {
				t.Errorf("Owned = %v, want %v", got, tt.owned)
			}
			if got := names(p.Adopt); !slices.Equal(got, tt.adopt) {
				t.Errorf("Adopt = %v, want %v", got, tt.adopt)
			}
			if got := names(p.Release); !slices.Equal(got, tt.release) {
				t.Errorf("Release = %v, want %v", got, tt.release)
			}
		})
	}
}

func TestPatches(t *testing.T) {
	t.Parallel()
	rs := owner("web", "web-uid")
	gc := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	withGC := pod("p", "web")
	withGC.UID, withGC.ResourceVersion = "pod-uid", "42"
	withGC.OwnerReferences = []metav1.OwnerReference{gc}
	controlled := withGC.DeepCopy()
	controlled.OwnerReferences = append(controlled.OwnerReferences, *metav1.NewControllerRef(rs, rsKind))
	onlyRS := withGC.DeepCopy()
	onlyRS.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)}

	tests := []struct {
		name  string
		build func() ([]byte, error)
		obj   *corev1.Pod
		want  []types.UID // owner UIDs in the patch, in order
	}{
		{"adopt keeps the other owners", func() ([]byte, error) { return AdoptPatch(rs, rsKind, withGC) }, withGC, []types.UID{"cm-uid", "web-uid"}},
		{"release keeps the other owners", func() ([]byte, error) { return ReleasePatch(rs, controlled) }, controlled, []types.UID{"cm-uid"}},
		{"releasing the last owner sends an empty list", func() ([]byte, error) { return ReleasePatch(rs, onlyRS) }, onlyRS, []types.UID{}},
		{"nil refs send an empty list", func() ([]byte, error) { return OwnerPatch(withGC, nil) }, withGC, []types.UID{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := slices.Clone(tt.obj.OwnerReferences)
			b, err := tt.build()
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]map[string]json.RawMessage
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			if string(raw["metadata"]["ownerReferences"]) == "null" {
				t.Fatalf("ownerReferences is null in %s", b)
			}
			var m MergePatch
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Metadata.UID != "pod-uid" || m.Metadata.ResourceVersion != "42" {
				t.Errorf("patch not pinned: %s", b)
			}
			got := []types.UID{}
			for _, r := range m.Metadata.OwnerReferences {
				got = append(got, r.UID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("owner UIDs = %v, want %v", got, tt.want)
			}
			if !slices.Equal(tt.obj.OwnerReferences, before) {
				t.Error("the object's owner references were changed")
			}
		})
	}
	refs := AdoptRefs(rs, rsKind, withGC)
	if c := refs[len(refs)-1]; c.Controller == nil || !*c.Controller || c.Kind != "ReplicaSet" || c.Name != "web" {
		t.Errorf("adopted reference %+v", c)
	}
}

func TestCanAdopt(t *testing.T) {
	t.Parallel()
	rs := owner("web", "web-uid")
	replaced := owner("web", "new-uid")
	beingDeleted := rs.DeepCopy()
	beingDeleted.DeletionTimestamp = &now
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web")

	tests := []struct {
		name    string
		fresh   *appsv1.ReplicaSet
		err     error
		wantErr string
	}{
		{"same and live", rs, nil, ""},
		{"gone", nil, notFound, "checking replicaset ns/web before adopting"},
		{"replaced", replaced, nil, "replicaset ns/web was replaced (uid new-uid, cached web-uid)"},
		{"being deleted", beingDeleted, nil, "replicaset ns/web is being deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			get := func(_ context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
				if ns != "ns" || name != "web" {
					t.Errorf("get(%s, %s)", ns, name)
				}
				return tt.fresh, tt.err
			}
			err := CanAdopt(context.Background(), "replicaset", rs, get)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("CanAdopt: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("CanAdopt = %v, want %q", err, tt.wantErr)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("CanAdopt = %v does not wrap %v", err, tt.err)
			}
		})
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	plan := Plan[*corev1.Pod]{
		Owned:   []*corev1.Pod{pod("mine", "web")},
		Adopt:   []*corev1.Pod{pod("orphan-a", "web"), pod("orphan-fails", "web"), pod("orphan-gone", "web")},
		Release: []*corev1.Pod{pod("strayed", "db"), pod("strayed-fails", "db")},
	}
	tests := []struct {
		name     string
		canAdopt error
		owned    []string
		released []string
		errs     []string
	}{
		{"adopts and releases", nil,
			[]string{"mine", "orphan-a"}, []string{"strayed", "strayed-fails"},
			[]string{"adopting pod ns/orphan-fails: boom", "releasing pod ns/strayed-fails: boom"}},
		{"may not adopt: releases still", boom,
			[]string{"mine"}, []string{"strayed", "strayed-fails"},
			[]string{"boom", "releasing pod ns/strayed-fails: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var released []string
			w := Writes[*corev1.Pod]{
				Kind:     "pod",
				CanAdopt: func(context.Context) error { return tt.canAdopt },
				Adopt: func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) {
					switch p.Name {
					case "orphan-fails":
						return nil, boom
					case "orphan-gone":
						return nil, nil
					}
					return p, nil
				},
				Release: func(_ context.Context, p *corev1.Pod) error {
					released = append(released, p.Name)
					if p.Name == "strayed-fails" {
						return boom
					}
					return nil
				},
			}
			owned, err := Apply(context.Background(), plan, w)
			if got := names(owned); !slices.Equal(got, tt.owned) {
				t.Errorf("owned = %v, want %v", got, tt.owned)
			}
			if !slices.Equal(released, tt.released) {
				t.Errorf("released = %v, want %v", released, tt.released)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.errs) {
				t.Errorf("errors = %q, want %q", got, tt.errs)
			}
			if !errors.Is(err, boom) {
				t.Error("the error does not wrap the write's")
			}
		})
	}
}
