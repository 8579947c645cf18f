// Package servicealloc gives Services their cluster IPs and node ports.
//
// Each allocated value is one etcd key outside /registry, holding the UID of
// the Service that owns it:
//
//	/kubebus/serviceips/<address>   (IPv4 zero-padded, IPv6 expanded, so keys sort by address)
//	/kubebus/nodeports/<port>       (five digits)
//
// The allocator never writes. Allocate completes a Service (picks a free
// address or port where the spec leaves one empty, checks the ones it asks
// for) and returns a storage.Side: the keys to claim, each with a
// create-only condition, and the keys to release. The API server commits
// that Side in the same etcd transaction as the Service itself, so a
// Service and its allocations appear and disappear together, and two
// writers (goroutines or API server replicas) can never both claim a value:
// the loser's transaction fails with storage.ErrClaimed and it calls
// Allocate again, which picks another value or, for a value the client
// asked for, answers 422 "provided IP is already allocated".
//
// A free value is found by a bounded scan: start at a random offset of the
// range, read the claimed keys from there in pages, take the first gap,
// wrapping around once. The pure parts (range math, key encoding, the gap
// search) live in range.go and pick.go and are tested without etcd.
package servicealloc
