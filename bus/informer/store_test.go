package informer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubebus/kubebus/bus"
)

// at returns a pod as the cache holds it: resourceVersion set to rev.
func at(name string, rev int64, lbls ...string) *corev1.Pod {
	p := pod("a", name, "", nil)
	p.ResourceVersion = strconv.FormatInt(rev, 10)
	for _, l := range lbls {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
	return p
}

// describe renders changes as "add p@3", "update p@3->5", "delete p@5".
func describe(cs []change[*corev1.Pod]) []string {
	var out []string
	for _, c := range cs {
		switch c.kind {
		case updated:
			out = append(out, fmt.Sprintf("update %s@%s->%s", c.obj.Name, c.old.ResourceVersion, c.obj.ResourceVersion))
		default:
			out = append(out, fmt.Sprintf("%s %s@%s", c.kind, c.obj.Name, c.obj.ResourceVersion))
		}
	}
	slices.Sort(out)
	return out
}

func contents(s *store[*corev1.Pod]) []string {
	var out []string
	for _, p := range s.list() {
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	slices.Sort(out)
	return out
}

type ev struct {
	typ  bus.EventType
	name string
	rev  int64
}

func TestStoreApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		seed    *snapshot[*corev1.Pod] // loaded first, when set
		events  []ev
		changes []string
		want    []string
	}{
		{
			name:    "add update delete",
			events:  []ev{{bus.Added, "p", 3}, {bus.Modified, "p", 5}, {bus.Added, "q", 6}, {bus.Deleted, "p", 7}},
			changes: []string{"add p@3", "add q@6", "delete p@7", "update p@3->5"},
			want:    []string{"q@6"},
		},
		{
			name:    "an ADDED for a known object updates it; a MODIFIED for an unknown one adds it",
			events:  []ev{{bus.Modified, "p", 3}, {bus.Added, "p", 4}},
			changes: []string{"add p@3", "update p@3->4"},
			want:    []string{"p@4"},
		},
		{
			name:    "events the snapshot already holds are stale",
			seed:    snap(obj("p", 10), obj("q", 4)),
			events:  []ev{{bus.Modified, "p", 8}, {bus.Modified, "p", 10}, {bus.Modified, "q", 5}, {bus.Modified, "p", 11}},
			changes: []string{"update p@10->11", "update q@4->5"},
			want:    []string{"p@11", "q@5"},
		},
		{
			name:    "a tombstone keeps older events from bringing an object back",
			seed:    snap(obj("q", 2), tomb("p", 9)),
			events:  []ev{{bus.Added, "p", 5}, {bus.Modified, "p", 9}, {bus.Deleted, "p", 9}, {bus.Added, "p", 12}},
			changes: []string{"add p@12"},
			want:    []string{"p@12", "q@2"},
		},
		{
			name:    "a deletion of an unknown object changes nothing",
			events:  []ev{{bus.Deleted, "p", 3}},
			changes: nil,
			want:    nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore[*corev1.Pod](nil)
			if tc.seed != nil {
				s.reconcile(tc.seed)
			}
			var got []change[*corev1.Pod]
			for _, e := range tc.events {
				if c, ok := s.apply(objKey{"a", e.name}, e.typ, at(e.name, e.rev), true, e.rev); ok {
					got = append(got, c)
				}
			}
			if d := describe(got); !slices.Equal(d, tc.changes) {
				t.Errorf("changes %v, want %v", d, tc.changes)
			}
			if c := contents(s); !slices.Equal(c, tc.want) {
				t.Errorf("cache %v, want %v", c, tc.want)
			}
		})
	}
}

func TestStoreApplyDeleteWithoutObject(t *testing.T) {
	t.Parallel()
	s := newStore[*corev1.Pod](nil)
	s.apply(objKey{"a", "p"}, bus.Added, at("p", 3), true, 3)
	c, ok := s.apply(objKey{"a", "p"}, bus.Deleted, nil, false, 4)
	if !ok || c.kind != deleted || c.obj == nil || c.obj.ResourceVersion != "3" {
		t.Fatalf("delete without an object = %+v, %v; want the cached object", c, ok)
	}
}

// snapshot builders for the tables.
type snapEntry func(*snapshot[*corev1.Pod])

func obj(name string, rev int64) snapEntry {
	return func(s *snapshot[*corev1.Pod]) { s.add(objKey{"a", name}, at(name, rev), rev, false) }
}

func tomb(name string, rev int64) snapEntry {
	return func(s *snapshot[*corev1.Pod]) { s.add(objKey{"a", name}, nil, rev, true) }
}

func bad(name string) snapEntry {
	return func(s *snapshot[*corev1.Pod]) { s.bad[objKey{"a", name}] = struct{}{} }
}

func snap(entries ...snapEntry) *snapshot[*corev1.Pod] {
	s := newSnapshot[*corev1.Pod]()
	for _, e := range entries {
		e(s)
	}
	return s
}

func TestStoreReconcile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cache   []ev // applied live first
		snap    *snapshot[*corev1.Pod]
		changes []string
		want    []string
	}{
		{
			name:    "initial load adds everything but tombstones",
			snap:    snap(obj("p", 3), obj("q", 4), tomb("r", 5)),
			changes: []string{"add p@3", "add q@4"},
			want:    []string{"p@3", "q@4"},
		},
		{
			name:    "diff: added, updated, deleted, unchanged",
			cache:   []ev{{bus.Added, "p", 3}, {bus.Added, "q", 4}, {bus.Added, "r", 5}},
			snap:    snap(obj("p", 3), obj("q", 8), tomb("r", 7), obj("s", 9)),
			changes: []string{"add s@9", "delete r@5", "update q@4->8"},
			want:    []string{"p@3", "q@8", "s@9"},
		},
		{
			name:    "an object missing from the state is deleted",
			cache:   []ev{{bus.Added, "p", 3}, {bus.Added, "q", 4}},
			snap:    snap(obj("q", 6)),
			changes: []string{"delete p@3", "update q@4->6"},
			want:    []string{"q@6"},
		},
		{
			name:    "a cache entry newer than the state stays (the state lags by the event being applied)",
			cache:   []ev{{bus.Added, "p", 3}, {bus.Modified, "q", 12}, {bus.Added, "new", 13}},
			snap:    snap(obj("p", 3), obj("q", 10), tomb("x", 11)),
			changes: nil,
			want:    []string{"new@13", "p@3", "q@12"},
		},
		{
			name:    "an older tombstone does not delete a newer object",
			cache:   []ev{{bus.Added, "p", 8}},
			snap:    snap(tomb("p", 5), obj("q", 20)),
			changes: []string{"add q@20"},
			want:    []string{"p@8", "q@20"},
		},
		{
			name:    "a live deletion is not undone by a lagging state",
			cache:   []ev{{bus.Added, "p", 3}, {bus.Deleted, "p", 9}},
			snap:    snap(obj("p", 3)),
			changes: nil,
			want:    nil,
		},
		{
			name:    "an unreadable state entry keeps the cached object",
			cache:   []ev{{bus.Added, "p", 3}},
			snap:    snap(bad("p"), obj("q", 4)),
			changes: []string{"add q@4"},
			want:    []string{"p@3", "q@4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore[*corev1.Pod](nil)
			for _, e := range tc.cache {
				s.apply(objKey{"a", e.name}, e.typ, at(e.name, e.rev), true, e.rev)
			}
			if d := describe(s.reconcile(tc.snap)); !slices.Equal(d, tc.changes) {
				t.Errorf("changes %v, want %v", d, tc.changes)
			}
			if c := contents(s); !slices.Equal(c, tc.want) {
				t.Errorf("cache %v, want %v", c, tc.want)
			}
		})
	}
}

func TestSnapshotKeepsNewest(t *testing.T) {
	t.Parallel()
	// A subject overwritten during the read is delivered twice, in any
	// order once decoding is parallel.
	s := snap(obj("p", 5), obj("p", 3), tomb("q", 4), obj("q", 2), obj("r", 2), tomb("r", 6))
	if got := len(s.objs); got != 1 || s.objs[objKey{"a", "p"}].rev != 5 {
		t.Errorf("objects %v, want p@5 only", s.objs)
	}
	if s.tombs[objKey{"a", "q"}] != 4 || s.tombs[objKey{"a", "r"}] != 6 || s.maxRev != 6 {
		t.Errorf("tombstones %v (max %d), want q@4 r@6 (max 6)", s.tombs, s.maxRev)
	}
}

func TestStoreIndexes(t *testing.T) {
	t.Parallel()
	s := newStore(map[string]IndexFunc[*corev1.Pod]{
		"spec.nodeName": func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} },
	})
	put := func(ns, name, node string, rev int64, lbls map[string]string) {
		p := pod(ns, name, node, lbls)
		s.apply(objKey{ns, name}, bus.Modified, p, true, rev)
	}
	put("a", "web-1", "n1", 1, map[string]string{"app": "web", "tier": "front"})
	put("a", "web-2", "n2", 2, map[string]string{"app": "web"})
	put("b", "db-1", "n1", 3, map[string]string{"app": "db", "tier": "back"})
	put("b", "job", "", 4, nil)
	put("a", "web-2", "n1", 5, map[string]string{"app": "web", "tier": "front"}) // moves in every index
	s.apply(objKey{"b", "job"}, bus.Deleted, nil, false, 6)

	tests := []struct {
		name string
		got  []*corev1.Pod
		want []string
	}{
		{"namespace a", s.listNamespace("a"), []string{"a/web-1", "a/web-2"}},
		{"namespace b", s.listNamespace("b"), []string{"b/db-1"}},
		{"namespace none", s.listNamespace("c"), nil},
		{"node n1", s.byIndex("spec.nodeName", "n1"), []string{"a/web-1", "a/web-2", "b/db-1"}},
		{"node n2 (moved away)", s.byIndex("spec.nodeName", "n2"), nil},
		{"unbound (deleted)", s.byIndex("spec.nodeName", ""), nil},
		{"unknown index", s.byIndex("nope", "n1"), nil},
		{"app=web", s.byLabels(labels.SelectorFromSet(labels.Set{"app": "web"})), []string{"a/web-1", "a/web-2"}},
		{"app in (web,db),tier=front", s.byLabels(labels.Set{"tier": "front"}.AsSelector().Add(mustReq(t, "app", selection.In, "web", "db"))), []string{"a/web-1", "a/web-2"}},
		{"tier!=front", s.byLabels(labels.NewSelector().Add(mustReq(t, "tier", selection.NotEquals, "front"))), []string{"b/db-1"}},
		{"everything", s.byLabels(labels.Everything()), []string{"a/web-1", "a/web-2", "b/db-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.got); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func mustReq(t *testing.T, key string, op selection.Operator, values ...string) labels.Requirement {
	t.Helper()
	r, err := labels.NewRequirement(key, op, values)
	if err != nil {
		t.Fatal(err)
	}
	return *r
}
