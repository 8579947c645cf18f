package nft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/proxy/rules"
)

// Config says where the applier writes.
type Config struct {
	// NetNSFd, when not 0, is a network namespace to program instead of
	// the process's own (tests use it).
	NetNSFd int
}

// Applier writes rulesets to the kernel, one table per family. It
// remembers the last ruleset it applied to each so that the next Apply
// sends only the differences; after a failure it replaces the whole table
// again.
type Applier struct {
	mu     sync.Mutex
	conn   *nftables.Conn
	tables [2]tableState // by rules.Family
}

type tableState struct {
	table *nftables.Table
	last  *rules.Ruleset
	// chains indexes last's chains by name.
	chains map[string]rules.Chain
}

// New opens a netlink connection to nftables.
func New(cfg Config) (*Applier, error) {
	c, err := nftables.New(connOpts(cfg.NetNSFd)...)
	if err != nil {
		return nil, fmt.Errorf("nft: opening netlink: %w", err)
	}
	a := &Applier{conn: c}
	a.tables[rules.IPv4].table = &nftables.Table{Name: rules.Table, Family: nftables.TableFamilyIPv4}
	a.tables[rules.IPv6].table = &nftables.Table{Name: rules.Table, Family: nftables.TableFamilyIPv6}
	return a, nil
}

// Apply makes the table hold rs, in one transaction.
func (a *Applier) Apply(ctx context.Context, rs *rules.Ruleset) error {
	if rs == nil {
		return errors.New("nft: nil ruleset")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if rs.Family != rules.IPv4 && rs.Family != rules.IPv6 {
		return fmt.Errorf("nft: unknown family %d", rs.Family)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &a.tables[rs.Family]
	var err error
	if st.last == nil || !sameBase(st.last, rs) || setChanged(st.last, rs) {
		err = a.full(st, rs)
	} else {
		err = a.diff(st, rs)
	}
	if err != nil {
		st.last, st.chains = nil, nil
		return err
	}
	st.last = rs
	return nil
}

// Supports reports (nil) whether the kernel takes the family's table with
// nat chains, by adding and deleting a probe table in one transaction: the
// proxy's own table, which may be serving traffic, is not touched.
func (a *Applier) Supports(ctx context.Context, f rules.Family) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	probe := &nftables.Table{Name: rules.Table + "-probe", Family: a.tables[f].table.Family}
	c := a.conn
	c.AddTable(probe)
	ch, err := chainOf(probe, rules.Chain{Name: "probe", Hook: &rules.Hook{Type: "nat", Hook: "prerouting", Priority: -100}})
	if err != nil {
		return err
	}
	c.AddChain(ch)
	c.DelTable(probe)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nft: the %s family: %w", f, err)
	}
	return nil
}

// Cleanup deletes the tables of both families (and everything in them); a
// missing table is not an error.
func (a *Applier) Cleanup(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.tables {
		st := &a.tables[i]
		st.last, st.chains = nil, nil
		a.conn.AddTable(st.table)
		a.conn.DelTable(st.table)
		if err := a.conn.Flush(); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("nft: deleting table %s %s: %w", rules.Family(i), rules.Table, err)
		}
	}
	return nil
}

// full replaces the table: add (so that delete cannot fail), delete, and
// build it again, all in one transaction.
func (a *Applier) full(st *tableState, rs *rules.Ruleset) error {
	c, t := a.conn, st.table
	f := familyOf(t)
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	hp := hairpinSet(t)
	if err := c.AddSet(hp, nil); err != nil {
		return a.abort(fmt.Errorf("nft: set %s: %w", rules.SetHairpin, err))
	}
	for chunk := range slices.Chunk(rs.Hairpin, elementsPerMessage) {
		if err := c.SetAddElements(hp, hairpinElements(f, chunk)); err != nil {
			return a.abort(fmt.Errorf("nft: set %s: %w", rules.SetHairpin, err))
		}
	}
	for _, s := range rs.Sets {
		if err := c.AddSet(affinitySet(t, s), nil); err != nil {
			return a.abort(fmt.Errorf("nft: set %s: %w", s.Name, err))
		}
	}
	chains := make(map[string]*nftables.Chain, len(rs.Chains))
	for _, rc := range rs.Chains {
		ch, err := chainOf(t, rc)
		if err != nil {
			return a.abort(err)
		}
		chains[rc.Name] = c.AddChain(ch)
	}
	for _, m := range rs.Maps {
		set := mapSet(t, m)
		if err := c.AddSet(set, nil); err != nil {
			return a.abort(fmt.Errorf("nft: map %s: %w", m.Name, err))
		}
		if err := addElements(c, f, set, m, m.Elements); err != nil {
			return a.abort(err)
		}
	}
	for _, rc := range rs.Chains {
		for _, r := range rc.Rules {
			if err := addRule(c, t, chains[rc.Name], r); err != nil {
				return a.abort(err)
			}
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nft: writing table %s %s: %w", rs.Family, rules.Table, err)
	}
	st.chains = make(map[string]rules.Chain, len(rs.Chains))
	for _, ch := range rs.Chains {
		st.chains[ch.Name] = ch
	}
	return nil
}

// diff sends the changes from old to rs. Chains are matched by name
// through st.chains; those whose rules are the same slice as before (the
// Builder reuses unchanged Services) are not compared rule by rule.
func (a *Applier) diff(st *tableState, rs *rules.Ruleset) error {
	c, t, old := a.conn, st.table, st.last
	f := familyOf(t)
	oldSets := make(map[string]rules.Set, len(old.Sets))
	for _, s := range old.Sets {
		oldSets[s.Name] = s
	}
	newSets := make(map[string]bool, len(rs.Sets))

	// 1. New sets and chains, so that elements and rules can name them.
	for _, s := range rs.Sets {
		newSets[s.Name] = true
		if _, ok := oldSets[s.Name]; !ok {
			if err := c.AddSet(affinitySet(t, s), nil); err != nil {
				return a.abort(fmt.Errorf("nft: set %s: %w", s.Name, err))
			}
		}
	}
	var changed []rules.Chain
	kept := 0
	for _, ch := range rs.Chains {
		o, ok := st.chains[ch.Name]
		if !ok {
			c.AddChain(&nftables.Chain{Name: ch.Name, Table: t})
			changed = append(changed, ch)
			continue
		}
		kept++
		if !rulesEqual(o.Rules, ch.Rules) {
			c.FlushChain(&nftables.Chain{Name: ch.Name, Table: t})
			changed = append(changed, ch)
		}
	}
	// Chains that go: only looked for when some old chain was not kept.
	var gone []string
	if kept != len(st.chains) {
		names := make(map[string]bool, len(rs.Chains))
		for _, ch := range rs.Chains {
			names[ch.Name] = true
		}
		for name := range st.chains {
			if !names[name] {
				gone = append(gone, name)
			}
		}
		slices.Sort(gone)
	}
	// 2. Map elements that go or change.
	adds := make([][]rules.Element, len(rs.Maps))
	for i, m := range rs.Maps {
		del, add := diffElements(old.Maps[i].Elements, m.Elements)
		adds[i] = add
		for chunk := range slices.Chunk(del, elementsPerMessage) {
			if err := c.SetDeleteElements(mapSet(t, m), elements(f, m, chunk)); err != nil {
				return a.abort(fmt.Errorf("nft: map %s: %w", m.Name, err))
			}
		}
	}
	hp := hairpinSet(t)
	delHP, addHP := diffAddrs(old.Hairpin, rs.Hairpin)
	for chunk := range slices.Chunk(delHP, elementsPerMessage) {
		if err := c.SetDeleteElements(hp, hairpinElements(f, chunk)); err != nil {
			return a.abort(fmt.Errorf("nft: set %s: %w", rules.SetHairpin, err))
		}
	}
	for chunk := range slices.Chunk(addHP, elementsPerMessage) {
		if err := c.SetAddElements(hp, hairpinElements(f, chunk)); err != nil {
			return a.abort(fmt.Errorf("nft: set %s: %w", rules.SetHairpin, err))
		}
	}
	// 3. Chains that go lose their rules first (they may point at each other).
	for _, name := range gone {
		c.FlushChain(&nftables.Chain{Name: name, Table: t})
	}
	// 4. Rules of new and changed chains, then the new elements.
	for _, ch := range changed {
		nc := &nftables.Chain{Name: ch.Name, Table: t}
		for _, r := range ch.Rules {
			if err := addRule(c, t, nc, r); err != nil {
				return a.abort(err)
			}
		}
	}
	for i, m := range rs.Maps {
		if err := addElements(c, f, mapSet(t, m), m, adds[i]); err != nil {
			return a.abort(err)
		}
	}
	// 5. Unreferenced chains and sets go.
	for _, name := range gone {
		c.DelChain(&nftables.Chain{Name: name, Table: t})
	}
	for _, s := range old.Sets {
		if !newSets[s.Name] {
			c.DelSet(affinitySet(t, s))
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nft: updating table %s %s: %w", rs.Family, rules.Table, err)
	}
	for _, ch := range changed {
		st.chains[ch.Name] = ch
	}
	for _, name := range gone {
		delete(st.chains, name)
	}
	return nil
}

// elementsPerMessage keeps each element message's attribute list under
// netlink's 64 KiB attribute length (a chain name is at most 256 bytes);
// the kernel silently ignores what does not fit.
const elementsPerMessage = 128

// addElements queues es for the map in messages of elementsPerMessage.
func addElements(c *nftables.Conn, f family, set *nftables.Set, m rules.Map, es []rules.Element) error {
	for chunk := range slices.Chunk(es, elementsPerMessage) {
		if err := c.SetAddElements(set, elements(f, m, chunk)); err != nil {
			return fmt.Errorf("nft: map %s: %w", m.Name, err)
		}
	}
	return nil
}

// abort drops the queued messages and returns err.
func (a *Applier) abort(err error) error {
	// The library has no way to discard queued messages but sending them;
	// a fresh connection leaves the old queue to the garbage collector.
	if c, e := nftables.New(connOpts(a.conn.NetNS)...); e == nil {
		a.conn = c
	}
	return err
}

// sockBuf is the netlink socket's send and receive buffer: a whole table of
// 10,000 Services is one message of tens of megabytes, and every part of
// it is acknowledged.
const sockBuf = 1 << 30

func connOpts(netnsFd int) []nftables.ConnOption {
	opts := []nftables.ConnOption{nftables.WithSockOptions(func(c *netlink.Conn) error {
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sockBuf)
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, sockBuf)
			}
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("nft: sizing the netlink socket buffers: %w", serr)
		}
		return nil
	})}
	if netnsFd != 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFd))
	}
	return opts
}

// sameBase reports whether the two rulesets have the same maps in the same
// order and the same base chains, which diff relies on.
func sameBase(a, b *rules.Ruleset) bool {
	if len(a.Maps) != len(b.Maps) {
		return false
	}
	for i := range a.Maps {
		if a.Maps[i].Name != b.Maps[i].Name || a.Maps[i].Key != b.Maps[i].Key {
			return false
		}
	}
	hooks := func(rs *rules.Ruleset) map[string]rules.Chain {
		m := map[string]rules.Chain{}
		for _, c := range rs.Chains {
			if c.Hook != nil {
				m[c.Name] = c
			}
		}
		return m
	}
	ha, hb := hooks(a), hooks(b)
	if len(ha) != len(hb) {
		return false
	}
	for n, c := range ha {
		d, ok := hb[n]
		if !ok || *c.Hook != *d.Hook || !rulesEqual(c.Rules, d.Rules) {
			return false
		}
	}
	return true
}

// rulesEqual compares rules; every rule kind is a comparable struct.
// setChanged reports whether a set kept its name but not its settings: its
// rules would still use it, so it cannot be replaced in a diff.
func setChanged(a, b *rules.Ruleset) bool {
	old := make(map[string]rules.Set, len(a.Sets))
	for _, s := range a.Sets {
		old[s.Name] = s
	}
	for _, s := range b.Sets {
		if o, ok := old[s.Name]; ok && o != s {
			return true
		}
	}
	return false
}

func rulesEqual(a, b []rules.Rule) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
		return true // the same slice
	}
	return slices.Equal(a, b)
}

// diffAddrs returns what is in old only and in cur only; both are sorted.
func diffAddrs(old, cur []netip.Addr) (del, add []netip.Addr) {
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(old) && old[i].Less(cur[j])):
			del = append(del, old[i])
			i++
		case i == len(old) || cur[j].Less(old[i]):
			add = append(add, cur[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return del, add
}

func compareElements(a, b rules.Element) int {
	return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
}

// diffElements returns the elements to delete (gone or changed) and to add
// (new or changed); both inputs are sorted by key (rules.Build sorts them).
func diffElements(old, cur []rules.Element) (del, add []rules.Element) {
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		d := 0
		switch {
		case i == len(old):
			d = 1
		case j == len(cur):
			d = -1
		default:
			d = compareElements(old[i], cur[j])
		}
		switch {
		case d < 0:
			del = append(del, old[i])
			i++
		case d > 0:
			add = append(add, cur[j])
			j++
		default:
			if old[i].Goto != cur[j].Goto {
				del, add = append(del, old[i]), append(add, cur[j])
			}
			i, j = i+1, j+1
		}
	}
	return del, add
}
