package apiserver

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

func podsResource(t *testing.T) *resource.Resource {
	t.Helper()
	for _, r := range resource.Builtin() {
		if r.Plural == "pods" {
			return r
		}
	}
	t.Fatal("no pods resource")
	return nil
}

// testHubs returns n hubs of pods sharing one budget of limit bytes.
func testHubs(t *testing.T, n int, limit int64) []*hub {
	t.Helper()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	b := newRingBudget(limit)
	out := make([]*hub, n)
	for i := range out {
		out[i] = newHub(s, podsResource(t), b, 1)
	}
	return out
}

func testHub(t *testing.T) *hub { return testHubs(t, 1, DefaultWatchCacheBytes)[0] }

func pod(name string, lbls map[string]string, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls}, Spec: corev1.PodSpec{NodeName: node}}
}

// storedKV is p as etcd holds it at revision rev.
func storedKV(t *testing.T, res *resource.Resource, p *corev1.Pod, rev int64) storage.KV {
	t.Helper()
	s := &Server{cfg: Config{StorageMediaType: StorageProtobuf}}
	data, err := s.encodeForStorage(res, p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return storage.KV{Key: keyFor(res, p.Namespace, p.Name), Value: data, ModRevision: rev}
}

// change builds the hub event of a storage event: cur nil is a deletion
// of prev, prev nil a creation of cur.
func change(t *testing.T, res *resource.Resource, rev int64, prev, cur *corev1.Pod) *hubEvent {
	t.Helper()
	ev := storage.Event{Type: storage.Put, Revision: rev}
	if prev != nil {
		ev.Prev = storedKV(t, res, prev, rev-1)
	}
	if cur == nil {
		ev.Type, ev.KV = storage.Delete, storage.KV{Key: ev.Prev.Key, ModRevision: rev}
	} else {
		ev.KV, ev.Created = storedKV(t, res, cur, rev), prev == nil
	}
	he, err := newHubEvent(res, ev)
	if err != nil {
		t.Fatal(err)
	}
	return he
}

// atRev is a copy of a created event at another revision.
func (he *hubEvent) atRev(rev int64) *hubEvent {
	return &hubEvent{rev: rev, created: he.created, ns: he.ns, curJSON: he.curJSON, cur: he.cur, size: he.size}
}

func revs(sub *hubSub) []int64 {
	var got []int64
	for len(sub.ch) > 0 {
		got = append(got, (<-sub.ch).rev)
	}
	return got
}

func TestHubReplaysTheRingFromARevision(t *testing.T) {
	h := testHub(t)
	for rev := int64(1); rev <= 10; rev++ {
		h.publish(change(t, h.res, rev, nil, pod("p", nil, "")))
	}
	sub, _, ok := h.subscribe(6)
	if !ok {
		t.Fatal("subscribe from a revision inside the ring refused")
	}
	h.publish(change(t, h.res, 11, pod("p", nil, ""), pod("p", nil, "n")))
	if got, want := revs(sub), []int64{6, 7, 8, 9, 10, 11}; !equalRevs(got, want) {
		t.Fatalf("got revisions %v, want %v", got, want)
	}
}

func equalRevs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
	ev := change(t, h.res, 1, nil, pod("p", nil, ""))
	for rev := int64(1); rev <= hubClientBuf+1; rev++ {
		h.publish(ev.atRev(rev))
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

// TestHubRingHoldsBytesOnly: the ring keeps the object's JSON at the
// event's revision, and the previous state only when a selection could
// tell the two apart.
func TestHubRingHoldsBytesOnly(t *testing.T) {
	res := podsResource(t)
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name      string
		prev, cur *corev1.Pod
		keepPrev  bool
	}{
		{"created", nil, pod("p", web, ""), false},
		{"annotation only", pod("p", web, ""), withAnnotation(pod("p", web, "")), false},
		{"label changed", pod("p", web, ""), pod("p", map[string]string{"app": "db"}, ""), true},
		{"bound: spec.nodeName changed", pod("p", web, ""), pod("p", web, "node-1"), true},
		{"deleted", pod("p", web, ""), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			he := change(t, res, 7, tc.prev, tc.cur)
			if (he.prevStored != nil) != tc.keepPrev {
				t.Errorf("previous state kept: %v, want %v", he.prevStored != nil, tc.keepPrev)
			}
			var got corev1.Pod
			if err := json.Unmarshal(he.curJSON, &got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != "7" || got.Name != "p" || got.Kind != "Pod" {
				t.Errorf("encoded object %s/%s rv %q, want a Pod p at 7", got.Kind, got.Name, got.ResourceVersion)
			}
			if he.size < int64(len(he.curJSON)+len(he.prevStored)) {
				t.Errorf("charged %d bytes, less than the %d it holds", he.size, len(he.curJSON)+len(he.prevStored))
			}
		})
	}
}

func withAnnotation(p *corev1.Pod) *corev1.Pod {
	p.Annotations = map[string]string{"note": strings.Repeat("x", 100)}
	return p
}

// TestHubByteBound: the rings of every hub together stay within the
// budget; the hub holding the most gives up its oldest events, and its
// window starts after them.
func TestHubByteBound(t *testing.T) {
	res := podsResource(t)
	one := change(t, res, 1, nil, pod("p", nil, "")).size
	for _, tc := range []struct {
		name      string
		limit     int64 // in events of one's size
		busy      int   // events published to hub 0
		quiet     int   // events published to hub 1 first
		wantBusy  int   // events left in hub 0
		wantQuiet int   // events left in hub 1
	}{
		{"under the limit: everything kept", 10, 5, 0, 5, 0},
		{"at the limit", 10, 10, 0, 10, 0},
		{"over: the oldest go", 10, 25, 0, 10, 0},
		{"the busy hub gives way, the quiet keeps its history", 10, 30, 3, 7, 3},
		{"a quiet hub that is the largest loses first", 10, 5, 9, 5, 5},
		{"one event larger than the budget", 0, 3, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := testHubs(t, 2, tc.limit*one+one/2)
			rev := int64(0)
			for range tc.quiet {
				rev++
				hs[1].publish(change(t, res, rev, nil, pod("p", nil, "")))
			}
			for range tc.busy {
				rev++
				hs[0].publish(change(t, res, rev, nil, pod("p", nil, "")))
			}
			if got := len(hs[0].ring); got != tc.wantBusy {
				t.Errorf("busy hub keeps %d events, want %d", got, tc.wantBusy)
			}
			if got := len(hs[1].ring); got != tc.wantQuiet {
				t.Errorf("quiet hub keeps %d events, want %d", got, tc.wantQuiet)
			}
			b := hs[0].budget
			if used := b.used.Load(); used > b.limit || used != hs[0].ringBytes.Load()+hs[1].ringBytes.Load() {
				t.Errorf("budget counts %d bytes (limit %d), rings hold %d + %d", used, b.limit, hs[0].ringBytes.Load(), hs[1].ringBytes.Load())
			}
			for _, h := range hs {
				if len(h.ring) > 0 && h.startRev > h.ring[0].rev {
					t.Errorf("window starts at %d, after the first kept event %d", h.startRev, h.ring[0].rev)
				}
				if _, _, ok := h.subscribe(h.startRev - 1); ok && h.startRev > 1 {
					t.Errorf("a watch from %d, before the window, was served from memory", h.startRev-1)
				}
			}
		})
	}
}

func TestHubCountBound(t *testing.T) {
	h := testHub(t)
	ev := change(t, h.res, 1, nil, pod("p", nil, ""))
	for rev := int64(1); rev <= hubRing+5; rev++ {
		h.publish(ev.atRev(rev))
	}
	if len(h.ring) != hubRing || h.startRev != 6 {
		t.Fatalf("ring of %d events from %d, want %d from 6", len(h.ring), h.startRev, hubRing)
	}
	if want := int64(hubRing) * ev.size; h.ringBytes.Load() != want {
		t.Fatalf("ring counts %d bytes, want %d", h.ringBytes.Load(), want)
	}
}

func TestHubProtobufIsChargedWhileInTheRing(t *testing.T) {
	h := testHub(t)
	he := change(t, h.res, 1, nil, pod("p", nil, ""))
	h.publish(he)
	before := h.ringBytes.Load()
	pb, err := h.protobuf(he)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(pb), "k8s\x00") {
		t.Fatal("not a protobuf envelope")
	}
	if got := h.ringBytes.Load(); got != before+int64(len(pb)) {
		t.Fatalf("ring holds %d bytes after the protobuf encoding, want %d", got, before+int64(len(pb)))
	}
	h.evict(1)
	if h.ringBytes.Load() != 0 || h.budget.used.Load() != 0 {
		t.Fatalf("after evicting everything: ring %d bytes, budget %d", h.ringBytes.Load(), h.budget.used.Load())
	}
}

func TestClassifySelectorTransitions(t *testing.T) {
	h := testHub(t)
	web := map[string]string{"app": "web"}
	other := map[string]string{"app": "other"}
	sel := selection{labels: labels.SelectorFromSet(web), fields: fields.Everything()}
	onNode := selection{labels: labels.Everything(), fields: fields.OneTermEqualSelector("spec.nodeName", "n1")}
	all := selection{labels: labels.Everything(), fields: fields.Everything(), everything: true}
	setBased, err := labels.Parse("app in (web), !tier")
	if err != nil {
		t.Fatal(err)
	}
	sets := selection{labels: setBased, fields: fields.Everything()}
	for _, tc := range []struct {
		name      string
		sel       selection
		prev, cur *corev1.Pod
		want      watch.EventType
		wantLbl   string
	}{
		{"created and matching", sel, nil, pod("p", web, ""), watch.Added, "web"},
		{"created, not matching", sel, nil, pod("p", other, ""), "", ""},
		{"still matching", sel, pod("p", web, ""), pod("p", web, "n1"), watch.Modified, "web"},
		{"enters the selection", sel, pod("p", other, ""), pod("p", web, ""), watch.Added, "web"},
		{"leaves the selection: last matching state", sel, pod("p", web, ""), pod("p", other, ""), watch.Deleted, "web"},
		{"deleted while matching", sel, pod("p", web, ""), nil, watch.Deleted, "web"},
		{"deleted, never matched", sel, pod("p", other, ""), nil, "", ""},
		{"everything, modified", all, pod("p", web, ""), pod("p", other, ""), watch.Modified, "other"},
		{"field selector: bound to the node", onNode, pod("p", web, ""), pod("p", web, "n1"), watch.Added, "web"},
		{"set-based selector: matching", sets, nil, pod("p", web, ""), watch.Added, "web"},
		{"set-based selector: a label it excludes", sets, pod("p", web, ""), pod("p", map[string]string{"app": "web", "tier": "x"}, ""), watch.Deleted, "web"},
		{"field selector: moved away", onNode, pod("p", web, "n1"), pod("p", other, "n2"), watch.Deleted, "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			he := change(t, h.res, 5, tc.prev, tc.cur)
			typ, data, _, err := classify(h.res, tc.sel, he)
			if err != nil {
				t.Fatal(err)
			}
			if typ != tc.want {
				t.Fatalf("type %q, want %q", typ, tc.want)
			}
			if typ == "" {
				return
			}
			var p corev1.Pod
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatal(err)
			}
			if p.Labels["app"] != tc.wantLbl {
				t.Errorf("object labels %v, want app=%s", p.Labels, tc.wantLbl)
			}
			if p.ResourceVersion != "5" {
				t.Errorf("object resourceVersion %s, want the event's 5", p.ResourceVersion)
			}
		})
	}
}

func TestHubExpiresOldEvents(t *testing.T) {
	h := testHub(t)
	t0 := time.Now()
	for rev := int64(1); rev <= 4; rev++ {
		he := change(t, h.res, rev, nil, pod("p", nil, ""))
		he.at = t0.Add(time.Duration(rev) * time.Minute)
		h.publish(he)
	}
	h.expire(t0.Add(3 * time.Minute)) // events at 1 and 2 minutes go; 3 and 4 stay
	if len(h.ring) != 2 || h.ring[0].rev != 3 || h.startRev != 3 {
		t.Fatalf("ring of %d events, window from %d; want 2 from 3", len(h.ring), h.startRev)
	}
	if want := 2 * h.ring[0].size; h.ringBytes.Load() != want || h.budget.used.Load() != want {
		t.Fatalf("ring counts %d bytes, budget %d, want %d", h.ringBytes.Load(), h.budget.used.Load(), want)
	}
	if _, _, ok := h.subscribe(2); ok {
		t.Fatal("a watch from an expired revision was served from memory")
	}
}
