package tap

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Since is where the tap starts reading. The zero Since means "from now"
// when following and "from the oldest retained event" when not.
type Since struct {
	// Revision > 0 starts at the first event whose etcd revision is at
	// least Revision.
	Revision int64
	// Age > 0 starts at the first event stored at most Age ago.
	Age time.Duration
}

// IsZero reports whether no start was given.
func (s Since) IsZero() bool { return s.Revision == 0 && s.Age == 0 }

// ParseSince parses --since: a revision number ("1234") or a duration
// ("10m", "1h30m"). An empty string is the zero Since.
func ParseSince(s string) (Since, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Since{}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return Since{}, fmt.Errorf("tap: --since revision %d must be at least 1", n)
		}
		return Since{Revision: n}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Since{}, fmt.Errorf("tap: --since %q is neither a revision nor a duration", s)
	}
	if d <= 0 {
		return Since{}, fmt.Errorf("tap: --since duration %s must be positive", d)
	}
	return Since{Age: d}, nil
}

// Probe returns the first message stored at or after stream sequence seq:
// its sequence and the etcd revision in its Kube-Revision header. found is 0
// when there is none.
type Probe func(ctx context.Context, seq uint64) (found uint64, revision int64, err error)

// FindStart returns the stream sequence to start delivering at so that the
// first message delivered is the first with revision >= target, searching
// the stored sequences first..last with O(log n) probes. It relies on the
// publisher's guarantee that revisions increase with sequences; messages
// that were deleted or aged out are skipped over by the probe. (Were the
// revisions ever out of order the search could land in the wrong place;
// the Filter's MinRevision still drops anything older than target.) When no stored
// message qualifies it returns last+1: only what comes next.
func FindStart(ctx context.Context, first, last uint64, target int64, probe Probe) (uint64, error) {
	if first == 0 {
		first = 1
	}
	if last < first {
		return last + 1, nil
	}
	// Invariant: starting at hi qualifies (hi = last+1 trivially does);
	// starting before lo does not.
	lo, hi := first, last+1
	for lo < hi {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		mid := lo + (hi-lo)/2
		seq, rev, err := probe(ctx, mid)
		if err != nil {
			return 0, fmt.Errorf("reading stream sequence %d: %w", mid, err)
		}
		if seq == 0 || seq > last {
			hi = mid // nothing stored in mid..last
			continue
		}
		if rev >= target {
			hi = mid
		} else {
			lo = seq + 1 // mid..seq hold only seq, which is too old
		}
	}
	return lo, nil
}
