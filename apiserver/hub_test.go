package apiserver

import (
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/apiserver/resource"
)

func testHub(t *testing.T) *hub {
	t.Helper()
	var pods *resource.Resource
	for _, r := range resource.Builtin() {
		if r.Plural == "pods" {
			pods = r
		}
	}
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return &hub{s: s, res: pods, startRev: 1, subs: map[*hubSub]struct{}{}}
}

func pod(name string, lbls map[string]string, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls, ResourceVersion: rv}}
}

func TestHubReplaysTheRingFromARevision(t *testing.T) {
	h := testHub(t)
	for rev := int64(1); rev <= 10; rev++ {
		h.publish(&hubEvent{rev: rev, created: true, cur: pod("p", nil, itoa(rev))})
	}
	sub, _, ok := h.subscribe(6)
	if !ok {
		t.Fatal("subscribe from a revision inside the ring refused")
	}
	h.publish(&hubEvent{rev: 11, cur: pod("p", nil, "11")})
	var got []int64
	for len(sub.ch) > 0 {
		got = append(got, (<-sub.ch).rev)
	}
	want := []int64{6, 7, 8, 9, 10, 11}
	if len(got) != len(want) {
		t.Fatalf("got revisions %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got revisions %v, want %v", got, want)
		}
	}
}

func TestHubRefusesRevisionsBeforeItsWindow(t *testing.T) {
	h := testHub(t)
	h.startRev = 100
	if _, _, ok := h.subscribe(99); ok {
		t.Fatal("a watch from before the ring's window must fall back to etcd")
	}
	if _, _, ok := h.subscribe(100); !ok {
		t.Fatal("a watch from the window's start must be served")
	}
}

func TestHubCutsOffASlowWatcher(t *testing.T) {
	h := testHub(t)
	slow, _, _ := h.subscribe(1)
	fast, _, _ := h.subscribe(1)
	for rev := int64(1); rev <= hubClientBuf+1; rev++ {
		h.publish(&hubEvent{rev: rev, cur: pod("p", nil, itoa(rev))})
		<-fast.ch
	}
	if !slow.closed {
		t.Fatal("a watcher that fell hubClientBuf events behind was not cut off")
	}
	if fast.closed {
		t.Fatal("a watcher that kept up was cut off")
	}
	if _, still := h.subs[fast]; !still {
		t.Fatal("the fast watcher lost its subscription")
	}
}

func TestClassifySelectorTransitions(t *testing.T) {
	h := testHub(t)
	web := map[string]string{"app": "web"}
	other := map[string]string{"app": "other"}
	sel := selection{labels: labels.SelectorFromSet(web), fields: fields.Everything()}
	all := selection{labels: labels.Everything(), fields: fields.Everything(), everything: true}
	for _, tc := range []struct {
		name    string
		sel     selection
		ev      *hubEvent
		want    watch.EventType
		wantLbl string
	}{
		{"created and matching", sel, &hubEvent{rev: 2, created: true, cur: pod("p", web, "2")}, watch.Added, "web"},
		{"created, not matching", sel, &hubEvent{rev: 2, created: true, cur: pod("p", other, "2")}, "", ""},
		{"still matching", sel, &hubEvent{rev: 3, cur: pod("p", web, "3"), prev: pod("p", web, "2")}, watch.Modified, "web"},
		{"enters the selection", sel, &hubEvent{rev: 3, cur: pod("p", web, "3"), prev: pod("p", other, "2")}, watch.Added, "web"},
		{"leaves the selection: last matching state", sel, &hubEvent{rev: 3, cur: pod("p", other, "3"), prev: pod("p", web, "2")}, watch.Deleted, "web"},
		{"deleted while matching", sel, &hubEvent{rev: 4, deleted: true, cur: pod("p", web, "4")}, watch.Deleted, "web"},
		{"deleted, never matched", sel, &hubEvent{rev: 4, deleted: true, cur: pod("p", other, "4")}, "", ""},
		{"everything, modified", all, &hubEvent{rev: 5, cur: pod("p", other, "5"), prev: pod("p", web, "4")}, watch.Modified, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, obj, data := classify(h.res, tc.sel, tc.ev)
			if typ != tc.want {
				t.Fatalf("type %q, want %q", typ, tc.want)
			}
			if typ == "" {
				return
			}
			p := obj.(*corev1.Pod)
			if p.Labels["app"] != tc.wantLbl {
				t.Errorf("object labels %v, want app=%s", p.Labels, tc.wantLbl)
			}
			if p.ResourceVersion != itoa(tc.ev.rev) {
				t.Errorf("object resourceVersion %s, want the event's %d", p.ResourceVersion, tc.ev.rev)
			}
			if len(data) == 0 {
				t.Error("no encoded object")
			}
		})
	}
}
