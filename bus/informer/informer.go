package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Sentinel errors.
var (
	// ErrRunning: Run was called twice.
	ErrRunning = errors.New("informer: already running")
	// ErrDurableConflict: another process recreated this informer's durable
	// consumer; the two must not share it (set Config.Instance).
	ErrDurableConflict = errors.New("informer: another informer took over the durable consumer")
)

// Informer keeps an indexed cache of one resource's objects from the bus and
// tells its handlers about every change.
type Informer[T runtime.Object] struct {
	cfg      Config[T]
	log      *slog.Logger
	durable  string
	store    *store[T]
	hmu      sync.RWMutex // guards handlers; held for reading from a cache change until its handlers were told
	handlers []Handler[T]
	count    *counters
	m        *metrics

	running  atomic.Bool
	synced   atomic.Bool
	syncedCh chan struct{}
	rev      atomic.Int64

	// Run's state, touched by its goroutine only.
	live       jetstream.Stream // KUBE_HISTORY or KUBE_NODEPODS
	liveBorn   time.Time        // live's creation time: a new stream restarts the sequences
	cons       jetstream.Consumer
	created    time.Time // cons's creation time: tells our durable from another's
	recreate   bool      // the next open must recreate the durable at applied+1
	applied    uint64    // stream sequence of the last live message handled
	baseline   uint64    // the live stream's last sequence when the state stream was last read
	dseq       uint64    // delivery sequence of the last message received from cons
	chain      chain
	gapRev     int64 // revision of the last gap the cache was healed from
	syncTarget uint64
	checkNow   bool // check the stream before the next fetch
	healNow    bool // rebuild from the state stream at the next check
}

// New builds an Informer; Run starts it.
func New[T runtime.Object](cfg Config[T]) (*Informer[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	i := &Informer[T]{
		cfg:      cfg,
		durable:  cfg.durableName(),
		store:    newStore(cfg.Indexers),
		syncedCh: make(chan struct{}),
	}
	i.log = cfg.Logger.With("informer", i.durable)
	m, err := newMetrics(cfg.Metrics, prometheus.Labels{
		"component": cfg.Component, "resource": groupResource(cfg.Group, cfg.Resource),
		"namespace": cfg.Namespace, "node": cfg.Node, "instance": cfg.Instance,
	})
	if err != nil {
		return nil, err
	}
	i.m, i.count = m, newCounters(m)
	return i, nil
}

// AddHandler adds a handler. Handlers are called in the order they were
// added. A handler added while the informer runs is first told about every
// cached object as added (as client-go's shared informers do), so that
// components sharing one informer may start in any order.
func (i *Informer[T]) AddHandler(h Handler[T]) {
	i.hmu.Lock()
	defer i.hmu.Unlock()
	for _, obj := range i.store.list() {
		i.call(h, change[T]{kind: added, obj: obj})
	}
	i.handlers = append(i.handlers, h)
}

// Run loads the cache and follows the bus until ctx ends, which is not an
// error. It retries NATS failures forever; it fails only when it cannot go
// on (ErrDurableConflict).
func (i *Informer[T]) Run(ctx context.Context) error {
	if !i.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	i.log.Debug("informer starting", "stream", i.cfg.liveStream(), "filter", i.cfg.liveFilter(), "state", i.cfg.stateFilter())
	if err := i.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	i.removeLegacyDurable(ctx)
	err := i.follow(ctx)
	if ctx.Err() != nil {
		i.log.Debug("informer stopped", "revision", i.Revision())
		return nil
	}
	return err
}

// HasSynced reports whether the cache holds the state read at start and
// the history that was pending then, and the handlers were told about it.
func (i *Informer[T]) HasSynced() bool { return i.synced.Load() }

// WaitForSync blocks until HasSynced or ctx ends.
func (i *Informer[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-i.syncedCh:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer %s: waiting for sync: %w", i.durable, ctx.Err())
	}
}

func (i *Informer[T]) markSynced() {
	if i.synced.CompareAndSwap(false, true) {
		close(i.syncedCh)
		i.m.setSynced()
		i.log.Debug("informer synced", "objects", i.store.len(), "revision", i.Revision())
	}
}

// The cache's getters return objects shared with the cache and with every
// other caller: do not modify them (DeepCopy first). Lists are in no
// particular order.

// Get returns an object by namespace ("" for cluster-scoped) and name.
func (i *Informer[T]) Get(namespace, name string) (T, bool) {
	return i.store.get(objKey{namespace, name})
}

// List returns every cached object.
func (i *Informer[T]) List() []T { return i.store.list() }

// ListNamespace returns the objects of one namespace.
func (i *Informer[T]) ListNamespace(ns string) []T { return i.store.listNamespace(ns) }

// ByLabels returns the objects whose labels match sel.
func (i *Informer[T]) ByLabels(sel labels.Selector) []T { return i.store.byLabels(sel) }

// ByIndex returns the objects a Config.Indexers function put under value.
func (i *Informer[T]) ByIndex(index, value string) []T { return i.store.byIndex(index, value) }

// Revision returns the last revision applied to the cache.
func (i *Informer[T]) Revision() int64 { return i.rev.Load() }

// Stats returns the informer's counters.
func (i *Informer[T]) Stats() Stats { return i.count.stats() }

func (i *Informer[T]) bumpRev(rev int64) {
	if rev > i.rev.Load() {
		i.rev.Store(rev)
	}
}

// update changes the cache (f) and tells every handler about the changes,
// in order; no handler is added in between.
func (i *Informer[T]) update(f func() []change[T]) {
	i.hmu.RLock()
	defer i.hmu.RUnlock()
	for _, c := range f() {
		for _, h := range i.handlers {
			i.call(h, c)
		}
	}
}

// call tells one handler about one change. A handler that panics is
// logged with its stack and counted, and the informer goes on: one
// component's bug must not end every component of the process.
func (i *Informer[T]) call(h Handler[T], c change[T]) {
	defer func() {
		if r := recover(); r != nil {
			i.count.handlerPanic()
			name := ""
			if m, ok := any(c.obj).(interface {
				GetNamespace() string
				GetName() string
			}); ok {
				name = m.GetNamespace() + "/" + m.GetName()
			}
			i.log.Error("an informer handler panicked; going on with the next event", "event", c.kind.String(), "object", name,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	switch c.kind {
	case added:
		h.OnAdd(c.obj)
	case updated:
		h.OnUpdate(c.old, c.obj)
	case deleted:
		h.OnDelete(c.obj)
	}
}

// apiTimeout bounds each JetStream API request: a request sent while the
// connection is down can be lost, and must not stall the informer.
const apiTimeout = 5 * time.Second

func apiCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, apiTimeout)
}

// backoff doubles a wait from 50ms to 2s.
type backoff struct{ d time.Duration }

func (b *backoff) wait(ctx context.Context) {
	b.d = min(max(2*b.d, 50*time.Millisecond), 2*time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (b *backoff) reset() { b.d = 0 }

// retry runs f until it succeeds or ctx ends, logging now and then.
func (i *Informer[T]) retry(ctx context.Context, what string, f func() error) error {
	var b backoff
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt == 3 || attempt%50 == 0 {
			i.log.Warn("bus unavailable; retrying", "what", what, "err", err, "attempt", attempt)
		}
		b.wait(ctx)
	}
}
