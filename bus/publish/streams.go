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

// openStreams creates the streams that are missing, reads the cursor and,
// when a stream was lost since it was last opened, reseeds the bus from
// etcd: KUBE_STATE is rewritten from a fresh read and a GAP on the
// history streams tells consumers to rebuild from it. It retries until the
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
	defer func() { p.failedRev = 0 }()
	if err := p.retry(ctx, "ensuring streams", func() error { return bus.EnsureStreams(ctx, p.js, p.cfg.Limits) }); err != nil {
		return err
	}
	var created map[string]time.Time
	if err := p.retry(ctx, "reading the streams", func() (err error) { created, err = p.streamTimes(ctx); return err }); err != nil {
		return err
	}
	if err := p.retry(ctx, "reading the stream cursor", func() error { return p.loadCursor(ctx) }); err != nil {
		return err
	}
	switch lost := lostStreams(p.created, created, p.lastRev, p.cursorTime); {
	case len(lost) == 0:
	case len(lost) == 1 && lost[0] == bus.NodePodsStream:
		// KUBE_STATE holds every node's pods: only the kubelets, which
		// read KUBE_NODEPODS, need to rebuild from it.
		p.m.resets.Inc()
		if err := p.nodeGap(ctx, "KUBE_NODEPODS was lost or recreated"); err != nil {
			return err
		}
	default:
		p.m.resets.Inc()
		p.epoch++ // the state messages are sent again, not deduplicated
		if err := p.reseed(ctx, "a bus stream was lost or recreated"); err != nil {
			return err
		}
	}
	p.created = created
	return nil
}

// lostStreams names the streams that lost what they held since this
// publisher last opened them (before: their creation times then, nil on
// its first open), given their creation times now and the cursor (the
// last revision on KUBE_HISTORY and when it was stored).
//
// On the first open only KUBE_NODEPODS is checked: it is kept in memory,
// so a NATS server that restarts with the API server (the all-in-one)
// comes back without it. A KUBE_NODEPODS created after the cursor's
// message was stored did not exist when the revisions before it were
// published.
func lostStreams(before, now map[string]time.Time, lastRev int64, cursorTime time.Time) []string {
	if before == nil {
		if lastRev > 0 && now[bus.NodePodsStream].After(cursorTime) {
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

// streamTimes reads each stream's creation time.
func (p *Publisher) streamTimes(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, name := range bus.StreamNames {
		st, err := p.js.Stream(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", name, err)
		}
		out[name] = st.CachedInfo().Created
	}
	return out, nil
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
