package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubebus/kubebus/bus"
)

// LagRow is how far one durable consumer is behind.
type LagRow struct {
	Consumer string `json:"consumer"`
	Stream   string `json:"stream"`
	Filter   string `json:"filter"`
	// Pending is what the consumer has still to process: messages not yet
	// delivered plus messages delivered and not yet acknowledged.
	Pending uint64 `json:"pending"`
	// Oldest is when the oldest unacknowledged message was stored (zero
	// when caught up).
	Oldest time.Time `json:"oldest,omitzero"`
	// LastAckRevision is the revision of the message at the consumer's ack
	// floor: everything the consumer selects up to it is acknowledged. (The
	// server moves the floor to just before the next pending message, so it
	// may name a message outside the consumer's filter.) 0 when nothing was
	// acknowledged or that message is gone.
	LastAckRevision int64 `json:"lastAckRevision,omitempty"`
}

// SortLag orders rows by pending, most first, then by stream and consumer.
func SortLag(rows []LagRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Pending != b.Pending {
			return a.Pending > b.Pending
		}
		if a.Stream != b.Stream {
			return a.Stream < b.Stream
		}
		return a.Consumer < b.Consumer
	})
}

// RenderLag writes the lag table; ages are measured from now.
func RenderLag(w io.Writer, rows []LagRow, now time.Time) error {
	table := [][]string{{"CONSUMER", "STREAM", "FILTER", "PENDING", "OLDEST", "LAST-ACK-REVISION"}}
	for _, r := range rows {
		oldest := "-"
		if !r.Oldest.IsZero() {
			oldest = duration.HumanDuration(now.Sub(r.Oldest))
		}
		rev := "-"
		if r.LastAckRevision > 0 {
			rev = strconv.FormatInt(r.LastAckRevision, 10)
		}
		table = append(table, []string{r.Consumer, r.Stream, r.Filter, strconv.FormatUint(r.Pending, 10), oldest, rev})
	}
	widths := make([]int, len(table[0]))
	for _, cells := range table {
		for i, c := range cells {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, cells := range table {
		for i, c := range cells {
			if i == len(cells)-1 {
				b.WriteString(c + "\n")
				break
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-len(c)+3))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// consumerFilters lists a consumer's subject filters; none means every
// subject of the stream.
func consumerFilters(c jetstream.ConsumerConfig) []string {
	switch {
	case len(c.FilterSubjects) > 0:
		return c.FilterSubjects
	case c.FilterSubject != "":
		return []string{c.FilterSubject}
	default:
		return nil
	}
}

// Lag connects to NATS with creds and writes the lag table of every durable consumer
// on the history streams.
func Lag(ctx context.Context, url string, creds bus.Credentials, w io.Writer) error {
	if url == "" {
		url = DefaultURL
	}
	nc, js, err := connect(url, creds, false)
	if err != nil {
		return err
	}
	defer nc.Close()
	rows, err := LagRows(ctx, js)
	if err != nil {
		return err
	}
	SortLag(rows)
	return RenderLag(w, rows, time.Now())
}

// LagRows reads every durable consumer of KUBE_HISTORY and KUBE_NODEPODS. A stream that does
// not exist contributes no rows.
func LagRows(ctx context.Context, js jetstream.JetStream) ([]LagRow, error) {
	var rows []LagRow
	for _, name := range []string{bus.HistoryStream, bus.NodePodsStream} {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("opening stream %s: %w", name, err)
		}
		lister := st.ListConsumers(ctx)
		var infos []*jetstream.ConsumerInfo
		for ci := range lister.Info() {
			if ci.Config.Durable != "" {
				infos = append(infos, ci)
			}
		}
		if err := lister.Err(); err != nil {
			return nil, fmt.Errorf("listing consumers of %s: %w", name, err)
		}
		for _, ci := range infos {
			r, err := lagRow(ctx, st, ci)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func lagRow(ctx context.Context, st jetstream.Stream, ci *jetstream.ConsumerInfo) (LagRow, error) {
	filters := consumerFilters(ci.Config)
	r := LagRow{Consumer: ci.Name, Stream: ci.Stream, Filter: strings.Join(filters, ","),
		Pending: ci.NumPending + uint64(ci.NumAckPending)}
	if r.Filter == "" {
		r.Filter = ">"
	}
	floor := ci.AckFloor.Stream
	if floor > 0 {
		m, err := st.GetMsg(ctx, floor)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound): // aged out or deleted
		case err != nil:
			return LagRow{}, fmt.Errorf("reading %s sequence %d: %w", ci.Stream, floor, err)
		default:
			r.LastAckRevision = bus.HeaderInt(m.Header, bus.HeaderRevision)
		}
	}
	if r.Pending == 0 {
		return r, nil
	}
	// The oldest unacknowledged message is the first after the ack floor
	// that the consumer's filter selects.
	if len(filters) == 0 {
		filters = []string{">"}
	}
	for _, f := range filters {
		m, err := st.GetMsg(ctx, floor+1, jetstream.WithGetMsgSubject(f))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return LagRow{}, fmt.Errorf("reading %s after sequence %d: %w", ci.Stream, floor, err)
		}
		if r.Oldest.IsZero() || m.Time.Before(r.Oldest) {
			r.Oldest = m.Time
		}
	}
	return r, nil
}
