package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// The watch hub serves REST watches of one resource from a single etcd
// watch: each change is decoded once and encoded once, however many clients
// watch, and kept in a ring of recent events so a client resuming from a
// recent resourceVersion is served from memory. A client that falls behind
// is cut off (it resumes from its last resourceVersion), never slowing the
// others. Watches that start before the ring's window fall back to a direct
// etcd watch, so 410 Gone still means only "etcd compacted it".
//
// The ring holds encoded bytes, not decoded objects: the JSON of the object
// at the event's revision, its labels and field-selector attributes (what a
// watcher with a selection needs to decide what it sees), and the previous
// state's stored bytes only when its attributes differ, so that a watcher
// whose selection the object leaves can be sent the last matching state.
// Every hub's ring counts against one byte budget per server
// (Config.WatchCacheBytes); over it, the hub holding the most bytes drops
// its oldest events first. Events older than hubMaxAge are dropped too, so
// an idle server does not hold a full ring of history nobody resumes from.

const (
	hubRing       = 20000           // recent events kept per resource, whatever their size
	hubMaxAge     = 2 * time.Minute // events older are dropped (upstream's watch cache keeps at least 75 s)
	hubClientBuf  = 2048            // events a client may lag before it is cut off
	hubProgressEv = 5 * time.Second
)

// hubEvent is one change, shared read-only by every watcher.
type hubEvent struct {
	rev      int64
	at       time.Time // when the hub received it
	progress bool
	deleted  bool
	created  bool
	ns       string
	curJSON  []byte // JSON of the new state (for a delete, the last state) at rev
	cur      *attrs // what selections match against, of the state in curJSON
	// prev describes the state before a modification (nil when created;
	// the same pointer as cur when no selection can tell them apart).
	// prevStored is that state's stored value (JSON or protobuf), kept
	// only when prev != cur.
	prev       *attrs
	prevStored []byte

	size    int64 // bytes charged to the budget; guarded by the hub's mu
	inRing  bool  // guarded by the hub's mu
	pbOnce  sync.Once
	pbBytes []byte
}

// hub fans out one resource's changes.
type hub struct {
	s      *Server
	res    *resource.Resource
	budget *ringBudget
	ctx    context.Context    // ends the hub's etcd watch
	stop   context.CancelFunc // called when the resource is no longer served

	mu        sync.Mutex
	startRev  int64 // events from startRev on are (or were) in the ring
	headRev   int64 // newest revision every change up to which was received
	ring      []*hubEvent
	ringBytes atomic.Int64 // written under mu; read by the budget without it
	subs      map[*hubSub]struct{}
	err       error
}

// hubSub is one client's subscription.
type hubSub struct {
	ch     chan *hubEvent
	closed bool
}

// hubFor returns the resource's hub, starting it on first use.
func (s *Server) hubFor(res *resource.Resource) (*hub, error) {
	s.hubsMu.Lock()
	defer s.hubsMu.Unlock()
	if h, ok := s.hubs[res]; ok && h.alive() {
		return h, nil
	}
	rev, err := s.store.Revision(context.Background())
	if err != nil {
		return nil, storageError(err, res.GroupResource(), "")
	}
	h := newHub(s, res, s.ringBudget, rev+1)
	s.hubs[res] = h
	go h.run(rev + 1)
	return h, nil
}

func newHub(s *Server, res *resource.Resource, b *ringBudget, from int64) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &hub{s: s, res: res, budget: b, startRev: from, headRev: from - 1, subs: map[*hubSub]struct{}{}, ctx: ctx, stop: cancel}
	b.add(h)
	return h
}

func (h *hub) alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil
}

func (h *hub) run(from int64) {
	w := h.s.store.Watch(h.ctx, prefixFor(h.res, ""), from)
	defer w.Stop()
	tick := time.NewTicker(hubProgressEv)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			_ = w.RequestProgress()
			h.expire(now.Add(-hubMaxAge))
		case ev, ok := <-w.Events:
			if !ok {
				h.fail(w.Err())
				return
			}
			he, err := newHubEvent(h.res, ev)
			if err != nil {
				h.s.log.Warn("watch hub: skipping undecodable value", "resource", h.res.Plural, "revision", ev.Revision, "err", err)
				continue
			}
			if he != nil {
				he.at = time.Now()
				h.publish(he)
			}
		}
	}
}

// newHubEvent turns a storage event into a shared hub event (nil: nothing
// a watcher sees).
func newHubEvent(res *resource.Resource, ev storage.Event) (*hubEvent, error) {
	he := &hubEvent{rev: ev.Revision}
	switch ev.Type {
	case storage.Progress:
		he.progress = true
		return he, nil
	case storage.Delete:
		if ev.Prev.Key == "" {
			return nil, nil
		}
		obj, err := decodeStored(res, ev.Prev)
		if err != nil {
			return nil, err
		}
		he.deleted = true
		if err := he.setCur(res, obj); err != nil {
			return nil, err
		}
	default:
		obj, err := decodeStored(res, ev.KV)
		if err != nil {
			return nil, err
		}
		he.created = ev.Created || ev.Prev.Key == ""
		if err := he.setCur(res, obj); err != nil {
			return nil, err
		}
		if !he.created {
			prev, err := decodeStored(res, ev.Prev)
			if err != nil {
				return nil, err
			}
			if a := attrsOf(res, prev); a.equal(he.cur) {
				he.prev = he.cur
			} else {
				he.prev, he.prevStored = a, ev.Prev.Value
			}
		}
	}
	he.size = he.estimateSize()
	return he, nil
}

// setCur records obj, at the event's revision, as the event's state.
func (he *hubEvent) setCur(res *resource.Resource, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetResourceVersion(strconv.FormatInt(he.rev, 10))
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", res.GVK.Kind, m.GetName(), err)
	}
	he.ns, he.curJSON, he.cur = m.GetNamespace(), data, attrsOf(res, obj)
	return nil
}

// hubEventOverhead approximates the struct and slice headers of an event.
const hubEventOverhead = 160

func (he *hubEvent) estimateSize() int64 {
	n := int64(hubEventOverhead + len(he.ns) + len(he.curJSON) + len(he.prevStored))
	if he.cur != nil {
		n += he.cur.size()
	}
	if he.prev != nil && he.prev != he.cur {
		n += he.prev.size()
	}
	return n
}

// protobuf returns the protobuf envelope of the event's state, encoded on
// first use and charged to the ring from then on.
func (h *hub) protobuf(he *hubEvent) ([]byte, error) {
	var err error
	he.pbOnce.Do(func() {
		var obj runtime.Object
		if obj, err = decodeHubJSON(h.res, he.curJSON); err != nil {
			return
		}
		if he.pbBytes, err = encodeProtobuf(obj); err != nil {
			return
		}
		h.mu.Lock()
		if he.inRing {
			he.size += int64(len(he.pbBytes))
			h.ringBytes.Add(int64(len(he.pbBytes)))
			h.budget.used.Add(int64(len(he.pbBytes)))
		}
		h.mu.Unlock()
		h.budget.trim()
	})
	if err == nil && he.pbBytes == nil {
		return nil, fmt.Errorf("no protobuf encoding of %s at %d", h.res.GVK.Kind, he.rev)
	}
	return he.pbBytes, err
}

// decodeHubJSON decodes an object the hub encoded.
func decodeHubJSON(res *resource.Resource, data []byte) (runtime.Object, error) {
	obj := res.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", res.GVK.Kind, err)
	}
	setTypeMeta(res, obj)
	return obj, nil
}

// publish appends to the ring and hands the event to every subscriber,
// cutting off any that cannot keep up.
func (h *hub) publish(he *hubEvent) {
	h.mu.Lock()
	if he.rev > h.headRev {
		h.headRev = he.rev
	}
	if !he.progress {
		he.inRing = true
		h.ring = append(h.ring, he)
		h.ringBytes.Add(he.size)
		h.budget.used.Add(he.size)
		if len(h.ring) > hubRing {
			h.evictLocked(len(h.ring)-hubRing, 0)
		}
	}
	for sub := range h.subs {
		select {
		case sub.ch <- he:
		default:
			h.s.log.Debug("watch hub: cutting off a slow watcher", "resource", h.res.Plural)
			close(sub.ch)
			sub.closed = true
			delete(h.subs, sub)
		}
	}
	h.mu.Unlock()
	h.budget.trim()
}

// evictLocked drops the oldest events: at least n of them and at least
// bytes bytes' worth (or all). It returns the bytes freed. The caller
// holds mu.
func (h *hub) evictLocked(n int, bytes int64) int64 {
	var freed int64
	drop := 0
	for drop < len(h.ring) && (drop < n || freed < bytes) {
		he := h.ring[drop]
		he.inRing = false
		freed += he.size
		drop++
	}
	if drop == 0 {
		return 0
	}
	h.startRev = h.ring[drop-1].rev + 1
	clear(h.ring[:drop])
	if drop == len(h.ring) {
		h.ring = nil
	} else if cap(h.ring) > 2*(len(h.ring)-drop)+64 {
		h.ring = append([]*hubEvent(nil), h.ring[drop:]...)
	} else {
		h.ring = h.ring[drop:]
	}
	h.ringBytes.Add(-freed)
	h.budget.used.Add(-freed)
	return freed
}

// expire drops the events received before cutoff.
func (h *hub) expire(cutoff time.Time) {
	h.mu.Lock()
	n := 0
	for n < len(h.ring) && h.ring[n].at.Before(cutoff) {
		n++
	}
	h.evictLocked(n, 0)
	h.mu.Unlock()
}

// evict drops the oldest events worth at least bytes bytes.
func (h *hub) evict(bytes int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evictLocked(0, bytes)
}

func (h *hub) fail(err error) {
	h.mu.Lock()
	h.err = err
	for sub := range h.subs {
		close(sub.ch)
		sub.closed = true
		delete(h.subs, sub)
	}
	h.evictLocked(len(h.ring), 0)
	h.mu.Unlock()
	h.budget.remove(h)
	h.s.log.Warn("watch hub stopped; the next watch restarts it", "resource", h.res.Plural, "err", err)
}

// subscribe registers a subscriber for every event from revision from on.
// ok is false when from is older than the ring's window (the caller then
// watches etcd directly).
func (h *hub) subscribe(from int64) (*hubSub, int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil || from < h.startRev {
		return nil, 0, false
	}
	sub := &hubSub{ch: make(chan *hubEvent, hubClientBuf)}
	for _, he := range h.ring {
		if he.rev < from {
			continue
		}
		select {
		case sub.ch <- he:
		default:
			return nil, 0, false
		}
	}
	h.subs[sub] = struct{}{}
	return sub, h.headRev, true
}

func (h *hub) unsubscribe(sub *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !sub.closed {
		delete(h.subs, sub)
		close(sub.ch)
		sub.closed = true
	}
}

// classify decides what a watcher with a selection sees of an event: the
// type and the object's JSON (type "": nothing). shared is true when the
// JSON is the event's own state (whose protobuf the hub caches).
func classify(res *resource.Resource, sel selection, he *hubEvent) (typ watch.EventType, data []byte, shared bool, err error) {
	if he.deleted {
		if sel.matchesAttrs(he.cur) {
			return watch.Deleted, he.curJSON, true, nil
		}
		return "", nil, false, nil
	}
	curOK := sel.matchesAttrs(he.cur)
	prevOK := he.prev != nil && sel.matchesAttrs(he.prev)
	switch {
	case curOK && (prevOK || (sel.everything && !he.created)):
		return watch.Modified, he.curJSON, true, nil
	case curOK:
		return watch.Added, he.curJSON, true, nil
	case prevOK:
		// Leaving the selection (prev != cur, or both would match): the
		// last matching state, at this revision.
		p, err := decodeStored(res, storage.KV{Value: he.prevStored})
		if err != nil {
			return "", nil, false, err
		}
		m, _ := meta.Accessor(p)
		m.SetResourceVersion(strconv.FormatInt(he.rev, 10))
		data, err := json.Marshal(p)
		return watch.Deleted, data, false, err
	}
	return "", nil, false, nil
}
