package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
)

// errStreamsReset: a stream is missing, or was created again, since the
// publisher read its cursor; what the stream held is lost.
var errStreamsReset = errors.New("publish: a bus stream was lost or recreated")

// streamCheckEvery is how often an idle publisher checks that the streams
// it writes are still the ones it read its cursor from. A busy one learns
// it from its publishes failing.
const streamCheckEvery = 2 * time.Second

// openStreams creates the streams that are missing, reads the cursor and
// handles a stream lost since it was last opened (see lostStreams): when
// KUBE_NODEPODS alone was, a GAP on it sends the kubelets back to
// KUBE_STATE (nodeGap); when another was, the bus is reseeded from etcd:
// KUBE_STATE is rewritten from a fresh read and a GAP on the history
// streams tells consumers to rebuild from it. It retries until the
// streams are open or ctx ends.
func (p *Publisher) openStreams(ctx context.Context) error {
	backoff := 50 * time.Millisecond
	for {
		err := p.openStreamsOnce(ctx)
		if err == nil || ctx.Err() != nil || errors.Is(err, errFenced) {
			return err
		}
		p.health.fail("opening the streams", err)
		p.log.Debug("opening the streams failed; retrying", "err", err)
		sleep(ctx, backoff)
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (p *Publisher) openStreamsOnce(ctx context.Context) error {
	p.inflight = nil
	if err := p.retry(ctx, "ensuring streams", func() error { return bus.EnsureStreams(ctx, p.js, p.cfg.Limits) }); err != nil {
		return err
	}
	var created map[string]time.Time
	var nodeLastSeq uint64
	if err := p.retry(ctx, "reading the streams", func() (err error) { created, nodeLastSeq, err = p.streamTimes(ctx); return err }); err != nil {
		return err
	}
	if err := p.retry(ctx, "reading the stream cursor", func() error { return p.loadCursor(ctx) }); err != nil {
		return err
	}
	switch lost := lostStreams(p.created, created, nodeLastSeq, p.nodeSeq, p.lastRev); {
	case len(lost) == 0:
	case len(lost) == 1 && lost[0] == bus.NodePodsStream:
		// KUBE_STATE holds every node's pods: only the kubelets, which
		// read KUBE_NODEPODS, need to rebuild from it.
		p.m.resets.Inc()
		p.epoch++ // the state messages are sent again, not deduplicated
		if err := p.nodeGap(ctx, "KUBE_NODEPODS was lost or recreated"); err != nil {
			return err
		}
	default:
		p.m.resets.Inc()
		p.epoch++
		if err := p.reseed(ctx, "a bus stream was lost or recreated"); err != nil {
			return err
		}
	}
	p.created, p.failedRev = created, 0
	return nil
}

// lostStreams names the streams that lost what they held since this
// publisher last opened them. before is their creation times then (nil
// on its first open), now their creation times now; nodeLastSeq is
// KUBE_NODEPODS's last sequence now and nodeSeq the highest this
// publisher had stored there; lastRev is the history's last revision.
//
// A stream created again was lost. KUBE_NODEPODS is kept in memory, and
// can lose its messages without being created again: a NATS cluster
// keeps a stream's configuration and creation time on disk, not a memory
// stream's messages. So it was also lost when its sequences went back
// below what this publisher stored, or, on the first open, when it never
// held a message while the history holds revisions (the all-in-one's
// NATS, in process, restarted with it; or the stream was moved to memory;
// at worst, a cluster without a bound pod yet gets one needless GAP).
func lostStreams(before, now map[string]time.Time, nodeLastSeq, nodeSeq uint64, lastRev int64) []string {
	var lost []string
	if before != nil {
		for _, name := range bus.StreamNames {
			if !now[name].Equal(before[name]) {
				lost = append(lost, name)
			}
		}
	}
	nodesEmptied := nodeLastSeq < nodeSeq || (before == nil && nodeLastSeq == 0 && lastRev > 0)
	if nodesEmptied && !slices.Contains(lost, bus.NodePodsStream) {
		lost = append(lost, bus.NodePodsStream)
	}
	return lost
}

// streamTimes reads each stream's creation time, and KUBE_NODEPODS's last
// sequence.
func (p *Publisher) streamTimes(ctx context.Context) (map[string]time.Time, uint64, error) {
	out := map[string]time.Time{}
	var nodeLastSeq uint64
	for _, name := range bus.StreamNames {
		st, err := p.js.Stream(ctx, name)
		if err != nil {
			return nil, 0, fmt.Errorf("opening %s: %w", name, err)
		}
		out[name] = st.CachedInfo().Created
		if name == bus.NodePodsStream {
			nodeLastSeq = st.CachedInfo().State.LastSeq
		}
	}
	return out, nodeLastSeq, nil
}

// checkStreams returns errStreamsReset when a stream is missing or is not
// the one the cursor was read from.
func (p *Publisher) checkStreams(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	for _, name := range bus.StreamNames {
		st, err := p.js.Stream(actx, name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return permanent(fmt.Errorf("%w: %s is missing", errStreamsReset, name))
		case err != nil:
			return fmt.Errorf("reading %s: %w", name, err)
		case !st.CachedInfo().Created.Equal(p.created[name]):
			return permanent(fmt.Errorf("%w: %s was created again at %s", errStreamsReset, name, st.CachedInfo().Created.Format(time.RFC3339Nano)))
		case name == bus.NodePodsStream && st.CachedInfo().State.LastSeq < p.nodeSeq:
			return permanent(fmt.Errorf("%w: %s ends at sequence %d, before %d that it stored", errStreamsReset, name, st.CachedInfo().State.LastSeq, p.nodeSeq))
		}
	}
	return nil
}
