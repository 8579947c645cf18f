package apiserver

import (
	"context"
	"encoding/json"
	"sync"
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

const (
	hubRing       = 20000 // recent events kept per resource
	hubClientBuf  = 2048  // events a client may lag before it is cut off
	hubProgressEv = 5 * time.Second
)

// hubEvent is one decoded change, shared read-only by every watcher.
type hubEvent struct {
	rev      int64
	progress bool
	deleted  bool
	created  bool
	cur      runtime.Object // new state, or for a delete the last state (at rev)
	prev     runtime.Object // state before a modification (nil when created)
	curOnce  sync.Once
	curJSON  []byte
	pbOnce   sync.Once
	curPB    []byte
}

// curProtobuf is the protobuf envelope of cur, encoded once.
func (e *hubEvent) curProtobuf() []byte {
	e.pbOnce.Do(func() { e.curPB, _ = encodeProtobuf(e.cur) })
	return e.curPB
}

func (e *hubEvent) curBytes() []byte {
	e.curOnce.Do(func() { e.curJSON, _ = json.Marshal(e.cur) })
	return e.curJSON
}

// hub fans out one resource's changes.
type hub struct {
	s   *Server
	res *resource.Resource

	mu       sync.Mutex
	startRev int64 // events from startRev on are (or were) in the ring
	headRev  int64 // newest revision every change up to which was received
	ring     []*hubEvent
	subs     map[*hubSub]struct{}
	err      error
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
	h := &hub{s: s, res: res, startRev: rev + 1, headRev: rev, subs: map[*hubSub]struct{}{}}
	s.hubs[res] = h
	go h.run(rev + 1)
	return h, nil
}

func (h *hub) alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil
}

func (h *hub) run(from int64) {
	ctx := context.Background()
	w := h.s.store.Watch(ctx, prefixFor(h.res, ""), from)
	defer w.Stop()
	tick := time.NewTicker(hubProgressEv)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			_ = w.RequestProgress()
		case ev, ok := <-w.Events:
			if !ok {
				h.fail(w.Err())
				return
			}
			he := h.decode(ev)
			if he == nil {
				continue
			}
			h.publish(he)
		}
	}
}

// decode turns a storage event into a shared hub event.
func (h *hub) decode(ev storage.Event) *hubEvent {
	he := &hubEvent{rev: ev.Revision}
	switch ev.Type {
	case storage.Progress:
		he.progress = true
		return he
	case storage.Delete:
		if ev.Prev.Key == "" {
			return nil
		}
		obj, err := decodeStored(h.res, ev.Prev)
		if err != nil {
			h.s.log.Warn("watch hub: skipping undecodable value", "key", ev.Prev.Key, "err", err)
			return nil
		}
		m, _ := meta.Accessor(obj)
		m.SetResourceVersion(itoa(ev.Revision))
		he.deleted, he.cur = true, obj
	default:
		obj, err := decodeStored(h.res, ev.KV)
		if err != nil {
			h.s.log.Warn("watch hub: skipping undecodable value", "key", ev.KV.Key, "err", err)
			return nil
		}
		he.cur, he.created = obj, ev.Created || ev.Prev.Key == ""
		if !he.created {
			if prev, err := decodeStored(h.res, ev.Prev); err == nil {
				he.prev = prev
			}
		}
	}
	return he
}

// publish appends to the ring and hands the event to every subscriber,
// cutting off any that cannot keep up.
func (h *hub) publish(he *hubEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if he.rev > h.headRev {
		h.headRev = he.rev
	}
	if !he.progress {
		h.ring = append(h.ring, he)
		if len(h.ring) > hubRing {
			drop := len(h.ring) - hubRing
			h.startRev = h.ring[drop-1].rev + 1
			h.ring = append(h.ring[:0:0], h.ring[drop:]...)
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
}

func (h *hub) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
	for sub := range h.subs {
		close(sub.ch)
		sub.closed = true
		delete(h.subs, sub)
	}
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
// type and the object (nil: nothing).
func classify(res *resource.Resource, sel selection, he *hubEvent) (watch.EventType, runtime.Object, []byte) {
	if he.deleted {
		if sel.matches(res, he.cur) {
			return watch.Deleted, he.cur, he.curBytes()
		}
		return "", nil, nil
	}
	curOK := sel.matches(res, he.cur)
	prevOK := he.prev != nil && sel.matches(res, he.prev)
	switch {
	case curOK && (prevOK || (sel.everything && !he.created)):
		return watch.Modified, he.cur, he.curBytes()
	case curOK:
		return watch.Added, he.cur, he.curBytes()
	case prevOK:
		// Leaving the selection: the last matching state at this revision.
		p := he.prev.DeepCopyObject()
		m, _ := meta.Accessor(p)
		m.SetResourceVersion(itoa(he.rev))
		data, _ := json.Marshal(p)
		return watch.Deleted, p, data
	}
	return "", nil, nil
}
