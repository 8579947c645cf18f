package informer

// chain checks the Kube-Chain-Prev links of one chain (a resource on
// KUBE_HISTORY, a node on KUBE_NODEPODS): every event names the revision of
// the event before it on its chain, which must be the last one this
// informer saw. It is pure; the informer feeds it.
type chain struct {
	last  int64 // revision of the last event seen
	known bool  // false until the first event after a (re)start or a resync
}

// next records an event at rev whose predecessor is prev and reports
// whether it continues the chain. The first event after restart is taken
// as is: what came before it is covered by a read of the state stream.
func (c *chain) next(prev, rev int64) bool {
	ok := !c.known || prev == c.last
	c.last, c.known = rev, true
	return ok
}

// restart forgets the chain's end, after the cache was rebuilt from the
// state stream.
func (c *chain) restart() { c.known = false }
