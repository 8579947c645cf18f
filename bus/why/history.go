package why

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/tap"
)

// Rev is one revision of one object as the bus carried it.
type Rev struct {
	Revision int64
	// Time is when the bus stored the change.
	Time time.Time
	Type bus.EventType
	// Who is the writer (the newest managedFields manager), "-" if unknown.
	Who string
	// Object is the state after the change; for DELETED, the last state.
	Object json.RawMessage
}

// History is one object's revisions, oldest first.
type History struct {
	Key  bus.ObjectKey
	Revs []Rev
}

// Latest is the newest revision (nil for an empty history).
func (h *History) Latest() *Rev {
	if h == nil || len(h.Revs) == 0 {
		return nil
	}
	return &h.Revs[len(h.Revs)-1]
}

// Deleted reports whether the object's last change deleted it.
func (h *History) Deleted() bool {
	l := h.Latest()
	return l != nil && l.Type == bus.Deleted
}

// World is every history read for one question, by object.
type World struct {
	objects map[bus.ObjectKey]*History
	// Gaps are revision ranges the bus never carried; an answer that spans
	// one may be missing steps.
	Gaps [][2]int64
	// Hidden lists what the reader could not read (RBAC) or failed to
	// read, with the reason; the answer is made without it.
	Hidden []string
	// Revision is the newest revision seen.
	Revision int64
}

// NewWorld returns an empty World.
func NewWorld() *World { return &World{objects: map[bus.ObjectKey]*History{}} }

// Add files records read from the bus. Records may arrive from several
// queries, overlapping; each revision of an object is kept once.
func (w *World) Add(recs []tap.Record) {
	for _, r := range recs {
		ev := r.Event
		if ev == nil {
			continue
		}
		switch ev.Type {
		case bus.Gap:
			w.addGap(ev.From, ev.To)
			continue
		case bus.Added, bus.Modified, bus.Deleted:
		default:
			continue
		}
		k := ev.Key()
		h := w.objects[k]
		if h == nil {
			h = &History{Key: k}
			w.objects[k] = h
		}
		h.Revs = append(h.Revs, Rev{Revision: ev.Revision, Time: r.Time, Type: ev.Type, Who: tap.Who(ev.Object), Object: ev.Object})
		w.Revision = max(w.Revision, ev.Revision)
	}
	for _, h := range w.objects {
		sort.SliceStable(h.Revs, func(i, j int) bool { return h.Revs[i].Revision < h.Revs[j].Revision })
		out := h.Revs[:0]
		for i, r := range h.Revs {
			if i > 0 && r.Revision == h.Revs[i-1].Revision {
				continue
			}
			out = append(out, r)
		}
		h.Revs = out
	}
}

func (w *World) addGap(from, to int64) {
	for _, g := range w.Gaps {
		if g[0] == from && g[1] == to {
			return
		}
	}
	w.Gaps = append(w.Gaps, [2]int64{from, to})
}

// Get returns the history of one object, or nil.
func (w *World) Get(k bus.ObjectKey) *History { return w.objects[k] }

// Resource lists the histories of one resource in a namespace ("" for
// every namespace, or a cluster-scoped resource), ordered by first
// revision.
func (w *World) Resource(group, resource, namespace string) []*History {
	var out []*History
	for k, h := range w.objects {
		if k.Group == group && k.Resource == resource && (namespace == "" || k.Namespace == namespace) && len(h.Revs) > 0 {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revs[0].Revision < out[j].Revs[0].Revision })
	return out
}

// Until returns the World as it was at revision rev: later revisions are
// dropped. rev 0 returns w unchanged.
func (w *World) Until(rev int64) *World {
	if rev <= 0 {
		return w
	}
	out := &World{objects: map[bus.ObjectKey]*History{}, Hidden: w.Hidden}
	for k, h := range w.objects {
		n := 0
		for n < len(h.Revs) && h.Revs[n].Revision <= rev {
			n++
		}
		if n > 0 {
			out.objects[k] = &History{Key: k, Revs: h.Revs[:n]}
			out.Revision = max(out.Revision, h.Revs[n-1].Revision)
		}
	}
	for _, g := range w.Gaps {
		if g[0] <= rev {
			out.Gaps = append(out.Gaps, g)
		}
	}
	return out
}

// RevisionAt is the newest revision stored at or before t, 0 if none.
func (w *World) RevisionAt(t time.Time) int64 {
	var rev int64
	for _, h := range w.objects {
		for _, r := range h.Revs {
			if !r.Time.After(t) && r.Revision > rev {
				rev = r.Revision
			}
		}
	}
	return rev
}
