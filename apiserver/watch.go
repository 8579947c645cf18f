package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// watchEvent is one event on the wire.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watchRequest is a parsed watch.
type watchRequest struct {
	sel           selection
	fromRevision  int64 // first revision to stream; 0: after the initial state
	initial       bool  // send the current state as ADDED events first
	initialEndMrk bool  // end the initial state with a bookmark (sendInitialEvents)
	bookmarks     bool
	timeout       time.Duration
}

// parseWatchRequest reads a watch's query as upstream does. name is set
// for the deprecated /watch/.../<name> path form, which watches one object.
func parseWatchRequest(res *resource.Resource, r *http.Request, name string) (watchRequest, error) {
	opts, err := listOptions(r.URL.Query(), true)
	if err != nil {
		return watchRequest{}, err
	}
	if name != "" {
		if opts.FieldSelector != nil && !opts.FieldSelector.Empty() {
			if selected, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); !ok || selected != name {
				return watchRequest{}, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
			}
		} else {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name)
		}
	}
	sel, err := parseSelection(res, opts)
	if err != nil {
		return watchRequest{}, err
	}
	wr := watchRequest{sel: sel, bookmarks: opts.AllowWatchBookmarks}
	rv := opts.ResourceVersion
	switch {
	case opts.SendInitialEvents != nil:
		wr.initial = *opts.SendInitialEvents
		wr.initialEndMrk = wr.initial
		if wr.initial && !wr.bookmarks {
			return wr, apierrors.NewBadRequest("sendInitialEvents requires allowWatchBookmarks=true")
		}
		if !wr.initial && rv != "" && rv != "0" {
			n, err := strconv.ParseInt(rv, 10, 64)
			if err != nil || n < 0 {
				return wr, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
			}
			wr.fromRevision = n + 1
		}
	case rv == "" || rv == "0":
		wr.initial = true
	default:
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil || n < 0 {
			return wr, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
		}
		wr.fromRevision = n + 1
	}
	// Upstream spreads watch lifetimes between the minimum request timeout
	// and twice it, so reconnects do not synchronise; timeoutSeconds=0 (or
	// none) means that default.
	wr.timeout = time.Duration(1800+rand.IntN(1800)) * time.Second
	if t := opts.TimeoutSeconds; t != nil && *t > 0 {
		wr.timeout = time.Duration(*t) * time.Second
	}
	return wr, nil
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	if out.yaml {
		// Upstream has no YAML stream framing: a watch that prefers YAML is a 406.
		return errNotAcceptable(r.Header.Get("Accept"))
	}
	wr, err := parseWatchRequest(res, r, ri.Name)
	if err != nil {
		return err
	}
	release, err := s.watches.acquire(auth.UserFrom(r.Context()))
	if err != nil {
		s.cfg.Metrics.watchRejected.Inc()
		return err
	}
	// The watch ends, whether it timed out, the client went away or a
	// write failed, when this handler returns.
	defer release()
	ctx := r.Context()
	prefix := prefixFor(res, ri.Namespace)
	var initial []runtime.Object
	var initialRev int64
	if wr.initial {
		objs, lm, err := s.listObjects(ctx, res, prefix, listRequest{sel: wr.sel})
		if err != nil {
			return err
		}
		initial = objs
		initialRev, _ = strconv.ParseInt(lm.ResourceVersion, 10, 64)
		wr.fromRevision = initialRev + 1
	}
	flusher, _ := w.(http.Flusher)
	if out.protobuf {
		w.Header().Set("Content-Type", protobufMediaType+";stream=watch")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	ww := &watchWriter{w: w, flusher: flusher, enc: json.NewEncoder(w), res: res, out: out}
	for _, obj := range initial {
		if err := ww.send(watch.Added, obj, nil); err != nil {
			return nil
		}
	}
	if wr.initialEndMrk {
		if err := ww.bookmark(initialRev, true); err != nil {
			return nil
		}
	}
	ww.flush()
	if h, err := s.hubFor(res); err == nil {
		if sub, _, ok := h.subscribe(wr.fromRevision); ok {
			defer h.unsubscribe(sub)
			s.serveHubWatch(ctx, ww, wr, ri, h, sub)
			return nil
		}
	}
	s.serveEtcdWatch(ctx, ww, wr, res, prefix)
	return nil
}

// watchWriter writes watch events in the negotiated representation.
type watchWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	enc     *json.Encoder
	res     *resource.Resource
	out     output
}

func (ww *watchWriter) flush() {
	if ww.flusher != nil {
		ww.flusher.Flush()
	}
}

// send writes one event and flushes it.
func (ww *watchWriter) send(typ watch.EventType, obj runtime.Object, data []byte) error {
	if err := ww.write(typ, obj, data); err != nil {
		return err
	}
	ww.flush()
	return nil
}

// write writes one event without flushing. data, when given, is the
// object's JSON already encoded (shared by every watcher of the hub).
func (ww *watchWriter) write(typ watch.EventType, obj runtime.Object, data []byte) error {
	if ww.out.protobuf {
		env, err := encodeProtobuf(obj)
		if err != nil {
			return err
		}
		return ww.writeProtobuf(typ, env)
	}
	if data != nil && ww.out.kind == outObject && !ww.out.yaml {
		frame := make([]byte, 0, len(data)+32)
		frame = append(frame, `{"type":"`...)
		frame = append(frame, typ...)
		frame = append(frame, `","object":`...)
		frame = append(frame, data...)
		frame = append(frame, "}\n"...)
		_, err := ww.w.Write(frame)
		return err
	}
	v, err := render(ww.res, ww.out, []runtime.Object{obj}, nil, listMetaOf(obj))
	if err != nil {
		return err
	}
	return ww.enc.Encode(watchEvent{Type: typ, Object: v})
}

func (ww *watchWriter) writeProtobuf(typ watch.EventType, envelope []byte) error {
	frame, err := protobufWatchFrame(typ, envelope)
	if err != nil {
		return err
	}
	_, err = ww.w.Write(frame)
	return err
}

func (ww *watchWriter) bookmark(rev int64, initialEnd bool) error {
	b := ww.res.New()
	m, _ := meta.Accessor(b)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	setTypeMeta(ww.res, b)
	if err := ww.write(watch.Bookmark, b, nil); err != nil {
		return err
	}
	ww.flush()
	return nil
}

// serveHubWatch streams from the resource's shared hub.
func (s *Server) serveHubWatch(ctx context.Context, ww *watchWriter, wr watchRequest, ri RequestInfo, h *hub, sub *hubSub) {
	safeRev, bookmarked := wr.fromRevision-1, int64(-1)
	timeout := time.NewTimer(wr.timeout)
	defer timeout.Stop()
	var tick <-chan time.Time
	if wr.bookmarks {
		t := time.NewTicker(s.cfg.WatchBookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C:
			return
		case <-tick:
			if bookmarked < safeRev {
				if ww.bookmark(safeRev, false) != nil {
					return
				}
				bookmarked = safeRev
			}
		case he, ok := <-sub.ch:
			if !ok {
				return // cut off as too slow; the client resumes from its last resourceVersion
			}
			// Write this event and whatever else is already queued, then
			// flush once: one TLS record for a burst, not one per event.
			for n := 0; ; n++ {
				if he.rev > safeRev {
					safeRev = he.rev
				}
				if !he.progress && (ri.Namespace == "" || he.ns == ri.Namespace) {
					if err := s.writeHubEvent(ww, wr.sel, h, he); err != nil {
						return
					}
				}
				if n == 256 {
					break
				}
				select {
				case he, ok = <-sub.ch:
					if !ok {
						ww.flush()
						return
					}
					continue
				default:
				}
				break
			}
			ww.flush()
		}
	}
}

// writeHubEvent writes what a watcher with a selection sees of a hub event,
// without flushing. Errors that concern this event only (it cannot be
// decoded or encoded) are logged and skip it; a failed write ends the watch.
func (s *Server) writeHubEvent(ww *watchWriter, sel selection, h *hub, he *hubEvent) error {
	typ, data, shared, err := classify(h.res, sel, he)
	if err != nil || typ == "" {
		if err != nil {
			s.log.Warn("watch hub: skipping an event", "resource", h.res.Plural, "revision", he.rev, "err", err)
		}
		return nil
	}
	switch {
	case ww.out.protobuf && shared:
		pb, err := h.protobuf(he)
		if err != nil {
			s.log.Warn("watch hub: skipping an event", "resource", h.res.Plural, "revision", he.rev, "err", err)
			return nil
		}
		return ww.writeProtobuf(typ, pb)
	case !ww.out.protobuf && ww.out.kind == outObject && !ww.out.yaml:
		return ww.write(typ, nil, data)
	}
	obj, err := decodeHubJSON(h.res, data)
	if err != nil {
		s.log.Warn("watch hub: skipping an event", "resource", h.res.Plural, "revision", he.rev, "err", err)
		return nil
	}
	return ww.write(typ, obj, nil)
}

// serveEtcdWatch streams from a watch of its own on etcd: for watches that
// start before the hub's window.
func (s *Server) serveEtcdWatch(ctx context.Context, ww *watchWriter, wr watchRequest, res *resource.Resource, prefix string) {
	watcher := s.store.Watch(ctx, prefix, wr.fromRevision)
	defer watcher.Stop()
	timeout := time.NewTimer(wr.timeout)
	defer timeout.Stop()
	safeRev, bookmarked := wr.fromRevision-1, int64(-1)
	var tick <-chan time.Time
	if wr.bookmarks {
		t := time.NewTicker(s.cfg.WatchBookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C:
			return
		case <-tick:
			// Ask etcd for a newer safe point; until it answers (it will not
			// while the watch starts in the future), re-announce the one we have.
			_ = watcher.RequestProgress()
			if bookmarked < safeRev {
				if ww.bookmark(safeRev, false) != nil {
					return
				}
				bookmarked = safeRev
			}
		case ev, ok := <-watcher.Events:
			if !ok {
				if errors.Is(watcher.Err(), storage.ErrCompacted) {
					st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", wr.fromRevision-1)).Status()
					st.Kind, st.APIVersion = "Status", "v1"
					_ = ww.write(watch.Error, &st, nil)
					ww.flush()
				}
				return
			}
			if ev.Type == storage.Progress {
				if ev.Revision > safeRev {
					safeRev = ev.Revision
				}
				if wr.bookmarks && safeRev > bookmarked {
					if ww.bookmark(safeRev, false) != nil {
						return
					}
					bookmarked = safeRev
				}
				continue
			}
			safeRev = ev.Revision
			typ, obj, err := s.convertEvent(res, wr.sel, ev)
			if err != nil {
				s.log.WarnContext(ctx, "skipping undecodable watch event", "key", ev.KV.Key, "err", err)
				continue
			}
			if typ == "" {
				continue
			}
			if ww.send(typ, obj, nil) != nil {
				return
			}
		}
	}
}

// convertEvent turns a storage event into a watch event for a client with a
// selection: an object entering the selection is ADDED, leaving it DELETED.
// An empty type means the client does not see the event.
func (s *Server) convertEvent(res *resource.Resource, sel selection, ev storage.Event) (watch.EventType, runtime.Object, error) {
	if ev.Type == storage.Delete {
		if ev.Prev.Key == "" {
			return "", nil, nil
		}
		prev, err := decodeStored(res, ev.Prev)
		if err != nil {
			return "", nil, err
		}
		m, _ := meta.Accessor(prev)
		m.SetResourceVersion(strconv.FormatInt(ev.Revision, 10))
		if !sel.matches(res, prev) {
			return "", nil, nil
		}
		return watch.Deleted, prev, nil
	}
	cur, err := decodeStored(res, ev.KV)
	if err != nil {
		return "", nil, err
	}
	if sel.everything {
		if ev.Created || ev.Prev.Key == "" {
			return watch.Added, cur, nil
		}
		return watch.Modified, cur, nil
	}
	curOK := sel.matches(res, cur)
	var prev runtime.Object
	prevOK := false
	if ev.Prev.Key != "" {
		if prev, err = decodeStored(res, ev.Prev); err != nil {
			return "", nil, err
		}
		prevOK = sel.matches(res, prev)
	}
	switch {
	case curOK && prevOK:
		return watch.Modified, cur, nil
	case curOK:
		return watch.Added, cur, nil
	case prevOK:
		// Leaving the selection: the last matching state, at this revision.
		m, _ := meta.Accessor(prev)
		m.SetResourceVersion(strconv.FormatInt(ev.Revision, 10))
		return watch.Deleted, prev, nil
	}
	return "", nil, nil
}
