package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// Run connects to NATS with creds and prints the events cfg selects to w:
// when following, until ctx ends (which is not an error); otherwise up to
// the last event stored when it started.
func Run(ctx context.Context, cfg Config, creds bus.Credentials, w io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	nc, js, err := connect(cfg.URL, creds, cfg.Follow)
	if err != nil {
		return err
	}
	defer nc.Close()
	p := cfg.Printer
	return Tail(ctx, js, cfg, func(r Record) error { return p.Print(w, r) })
}

// connect dials NATS. Unlike a component, the tap fails at once when the
// server is not there; once connected, a follower reconnects forever.
func connect(url string, creds bus.Credentials, follow bool) (*nats.Conn, jetstream.JetStream, error) {
	return bus.ConnectOnce(url, "kubebus-tap", creds, follow)
}

// Tail reads KUBE_HISTORY with an ordered consumer and calls emit for every
// event cfg.Filter passes, in stream order. It returns emit's first error.
func Tail(ctx context.Context, js jetstream.JetStream, cfg Config, emit func(Record) error) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	st, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		return fmt.Errorf("opening stream %s (is the API server publishing?): %w", bus.HistoryStream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading stream %s: %w", bus.HistoryStream, err)
	}
	last := info.State.LastSeq // the end of "history up to now"
	if !cfg.Follow && info.State.Msgs == 0 {
		return nil
	}
	occ, ok, err := startAt(ctx, st, info.State, cfg)
	if err != nil || !ok {
		return err
	}
	cons, err := st.OrderedConsumer(ctx, occ)
	if err != nil {
		return fmt.Errorf("creating an ordered consumer on %s: %w", bus.HistoryStream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("reading %s: %w", bus.HistoryStream, err)
	}
	defer func() {
		it.Stop()
		removeConsumer(ctx, js, cons)
	}()
	if !cfg.Follow {
		// Nothing matched when the consumer was made: do not wait for more.
		ci, err := cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("reading the tap's consumer: %w", err)
		}
		if ci.NumPending == 0 && ci.Delivered.Consumer == 0 {
			return nil
		}
	}
	// Updates carry the revision of the previous state, not the state.
	prevs := newPreviousStates(directLastBefore(js.Conn(), bus.HistoryStream))
	prevs.complete = occ.DeliverPolicy == jetstream.DeliverAllPolicy ||
		occ.DeliverPolicy == jetstream.DeliverByStartSequencePolicy && occ.OptStartSeq <= info.State.FirstSeq
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading %s: %w", bus.HistoryStream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("reading message metadata: %w", err)
		}
		if !cfg.Follow && md.Sequence.Stream > last {
			return nil
		}
		ev, err := decodeEvent(msg.Data())
		if err != nil {
			cfg.Logger.Warn("skipping a message that is not an event", "subject", msg.Subject(), "seq", md.Sequence.Stream, "err", err)
		} else {
			if cfg.Filter.matchKey(ev) {
				if err := prevs.fill(ctx, ev, md.Sequence.Stream); err != nil {
					cfg.Logger.Warn("showing an update without its changes", "err", err)
				}
			}
			if cfg.Filter.Match(ev) {
				if err := emit(Record{Seq: md.Sequence.Stream, Time: md.Timestamp, Event: ev}); err != nil {
					return err
				}
			}
			prevs.remember(ev)
		}
		if !cfg.Follow && (md.Sequence.Stream >= last || md.NumPending == 0) {
			return nil
		}
	}
}

// startAt configures where the tap's consumer starts. ok is false when,
// not following, there is nothing to print.
func startAt(ctx context.Context, st jetstream.Stream, state jetstream.StreamState, cfg Config) (jetstream.OrderedConsumerConfig, bool, error) {
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: cfg.Filter.Subjects()}
	switch {
	case cfg.Since.Revision > 0:
		probe := streamProbe(st)
		start, err := FindStart(ctx, state.FirstSeq, state.LastSeq, cfg.Since.Revision, probe)
		if err != nil {
			return occ, false, fmt.Errorf("locating revision %d in %s: %w", cfg.Since.Revision, bus.HistoryStream, err)
		}
		if start <= state.FirstSeq && state.FirstSeq > 1 {
			// Older messages were removed: say so if the asked-for
			// revision was among them.
			if _, rev, err := probe(ctx, state.FirstSeq); err == nil && rev > cfg.Since.Revision {
				cfg.Logger.Warn("the bus no longer holds the start of the requested history; starting at its oldest event",
					"since", cfg.Since.Revision, "oldestRevision", rev)
			}
		}
		if !cfg.Follow && start > state.LastSeq {
			return occ, false, nil
		}
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	case cfg.Since.Age > 0:
		t := time.Now().Add(-cfg.Since.Age)
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	case cfg.Follow:
		occ.DeliverPolicy = jetstream.DeliverNewPolicy
	default:
		occ.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	return occ, true, nil
}

// removeConsumer deletes the tap's ordered consumer now rather than leave it
// to the server's inactivity timeout, also when ctx has ended.
func removeConsumer(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	ci := cons.CachedInfo()
	if ci == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, bus.HistoryStream, ci.Name) // best effort: it expires anyway
}

// streamProbe looks up the first message at or after a sequence.
func streamProbe(st jetstream.Stream) Probe {
	return func(ctx context.Context, seq uint64) (uint64, int64, error) {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, 0, nil
		}
		if err != nil {
			return 0, 0, err
		}
		return m.Sequence, bus.HeaderInt(m.Header, bus.HeaderRevision), nil
	}
}

// decodeEvent parses a bus message body and turns an object stored in
// protobuf into JSON: the tap and what is built on it (kubebus why) read
// and show objects as JSON, whatever encoding etcd keeps them in.
func decodeEvent(data []byte) (*bus.Event, error) {
	ev, err := bus.Decode(data)
	if err != nil || len(ev.ObjectProto) == 0 {
		return ev, err
	}
	obj, err := storedobj.ToJSON(ev.ObjectProto)
	if err != nil {
		return nil, fmt.Errorf("tap: the object of %s %s/%s at revision %d: %w", ev.Resource, ev.Namespace, ev.Name, ev.Revision, err)
	}
	ev.Object, ev.ObjectProto = obj, nil
	return ev, nil
}
