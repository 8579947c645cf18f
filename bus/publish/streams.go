package publish

import (
	"context"
	"errors"
	"fmt"
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
	switch lost := lostStreams(p.created, created, nodeLastSeq, p.lastRev); {
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
// KUBE_NODEPODS's last sequence now; lastRev is the history's last
// revision.
//
// While a publisher runs, a stream created again was lost. At its first
// open, KUBE_NODEPODS was lost when it never held a message while the
// history holds revisions: the all-in-one keeps it in memory, and its
// NATS, in process, restarted with the publisher (or the stream was just
// moved between disk and memory). At worst, a cluster without a bound
// pod yet gets one needless GAP.
func lostStreams(before, now map[string]time.Time, nodeLastSeq uint64, lastRev int64) []string {
	if before == nil {
		if nodeLastSeq == 0 && lastRev > 0 {
			return []string{bus.NodePodsStream}
		}
		return nil
	}
	var lost []string
	for _, name := range bus.StreamNames {
		if !now[name].Equal(before[name]) {
			lost = append(lost, name)
		}
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
		}
	}
	return nil
}
