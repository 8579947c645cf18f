package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// zoneState is how healthy a zone's nodes are.
type zoneState int

const (
	zoneNormal zoneState = iota
	// zonePartial: more than two nodes and at least the threshold share of
	// them are not ready.
	zonePartial
	// zoneFull: no node is ready.
	zoneFull
)

func (s zoneState) String() string {
	return [...]string{"Normal", "PartialDisruption", "FullDisruption"}[s]
}

// zoneOf is a node's zone key: its region and zone labels.
func zoneOf(node *corev1.Node) string {
	region, zone := node.Labels[corev1.LabelTopologyRegion], node.Labels[corev1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// zoneStateOf is upstream's rule.
func zoneStateOf(ready, notReady int, threshold float64) zoneState {
	switch {
	case ready == 0 && notReady > 0:
		return zoneFull
	case notReady > 2 && float64(notReady)/float64(ready+notReady) >= threshold:
		return zonePartial
	}
	return zoneNormal
}

// zoneInfo is one zone's state and size.
type zoneInfo struct {
	state zoneState
	size  int
}

// zoneSnapshot is every zone's state at one time.
type zoneSnapshot struct {
	zones map[string]zoneInfo
	// allDisrupted: every zone (at least one) has no ready node. The
	// controller then takes the fault to be its own and holds NoExecute
	// taints back.
	allDisrupted bool
	at           time.Time
}

// computeZones counts ready and not-ready nodes per zone. A node without a
// Ready condition counts as not ready.
func computeZones(nodes []*corev1.Node, threshold float64, now time.Time) zoneSnapshot {
	type count struct{ ready, notReady int }
	counts := map[string]*count{}
	for _, n := range nodes {
		z := zoneOf(n)
		c := counts[z]
		if c == nil {
			c = &count{}
			counts[z] = c
		}
		if readyStatus(n) == corev1.ConditionTrue {
			c.ready++
		} else {
			c.notReady++
		}
	}
	snap := zoneSnapshot{zones: map[string]zoneInfo{}, allDisrupted: len(counts) > 0, at: now}
	for z, c := range counts {
		s := zoneStateOf(c.ready, c.notReady, threshold)
		snap.zones[z] = zoneInfo{state: s, size: c.ready + c.notReady}
		snap.allDisrupted = snap.allDisrupted && s == zoneFull
	}
	return snap
}

// zoneRate is how many nodes per second of the zone may get a NoExecute
// taint added.
func zoneRate(z zoneInfo, cfg *Config) float64 {
	switch z.state {
	case zonePartial:
		if z.size > cfg.LargeClusterSize {
			return cfg.SecondaryEvictionRate
		}
		return 0
	default:
		// A fully disrupted zone (when others are not) is most likely really
		// down: its nodes go at the normal rate.
		return cfg.EvictionRate
	}
}

// bucket is a token bucket of burst 1 on an explicit clock.
type bucket struct {
	qps    float64
	tokens float64
	last   time.Time
}

func newBucket(qps float64, now time.Time) *bucket { return &bucket{qps: qps, tokens: 1, last: now} }

// setRate changes the rate from now on.
func (b *bucket) setRate(qps float64, now time.Time) {
	b.refill(now)
	b.qps = qps
}

func (b *bucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(1, b.tokens+b.qps*now.Sub(b.last).Seconds())
		b.last = now
	}
}

// take takes a token if there is one; otherwise it says how long until
// there will be (0 when the rate is zero: never).
func (b *bucket) take(now time.Time) (ok bool, wait time.Duration) {
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if b.qps <= 0 {
		return false, 0
	}
	return false, time.Duration((1 - b.tokens) / b.qps * float64(time.Second))
}
