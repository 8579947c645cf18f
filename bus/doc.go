// Package bus is kubebus's event bus on NATS JetStream.
//
// The API server republishes every committed etcd revision under /registry
// here, in revision order, and every other component builds its caches from
// the bus instead of listing and watching the API server. Only bus packages
// import nats.go.
//
// # Subjects
//
// One subject per object:
//
//	kube.<group>.<resource>.<namespace>.<name>
//
// <group> is "core" for the legacy group; <namespace> is "_" for
// cluster-scoped objects. Tokens are escaped reversibly (see Escape): '%',
// '.', '*', '>', whitespace and other bytes NATS treats specially become %XX,
// so an object name with dots stays one token. Pods bound to a node are also
// routed per node:
//
//	knode.<node>.<namespace>.<name>
//
// and a kubelet subscribes to knode.<its node>.> only.
//
// # Streams
//
//   - KUBE_HISTORY (kube.>, kbus.>): every event, retained by age and size
//     (default 24h, 1 GiB). Message IDs are "r<revision>", so a retried
//     publish is deduplicated, and the publisher fences with the expected
//     last stream sequence, so two publishers cannot interleave.
//   - KUBE_NODEPODS (knode.>): the per-node copy of pod events, same
//     limits; the all-in-one keeps it in memory with its own byte limit
//     (see StreamLimits.NodePodsInMemory and DefaultNodeMaxBytes). When
//     it is lost on its own, the publisher announces a GAP on knode._gap
//     only.
//   - KUBE_STATE (kstate.>, kstatenode.>): the latest event per object (one
//     message per subject); a DELETED event stays as a tombstone that expires
//     after an hour. A new consumer rebuilds the current state of a resource
//     from here without asking the API server. Its byte limit (default that
//     of the history) discards new messages when reached, never an object's
//     latest state: the publisher then stalls, and /readyz says so.
//
// Only the API server's publisher may write these subjects or manage the
// streams; readers and kubelets get the subjects package busauth allows
// them, over mutual TLS (see docs/architecture.md).
//
// # Events and ordering
//
// Each message carries an Event (JSON) with the object as stored (in
// "object" when etcd keeps it as JSON, in "objectProto", base64, when it
// keeps it in Kubernetes' protobuf envelope, as it does pods; Event.Stored
// is either, and internal/storedobj decodes both) and the
// revision of its previous state (the state itself is not repeated: it is
// the object's previous message on KUBE_HISTORY, which `kubebus tap`
// reads when it shows what changed), and headers that let a consumer
// filter and check order without decoding: Kube-Revision, Kube-Type,
// Kube-Resource, Kube-Chain-Prev.
// Kube-Chain-Prev is the revision of the previous event on the same chain
// (the same resource on KUBE_HISTORY, the same node on KUBE_NODEPODS), so a
// consumer filtered to one resource can still tell "caught up" from "missed
// something": every event's Kube-Chain-Prev must equal the revision of the
// last event it saw on that chain. Control events on kbus.gap (and
// knode._gap, which node consumers read) say the publisher could not
// republish a range of revisions (etcd compacted them while NATS was
// unreachable, or the streams were lost and recreated); the publisher
// reseeds KUBE_STATE first, then publishes the GAP, and consumers heal by
// reloading from the state stream. When KUBE_NODEPODS alone lost its
// messages, KUBE_STATE needs no reseeding: the GAP is on knode._gap only,
// at the revision before the point the publisher resends node events
// from. After a GAP every chain of its stream restarts: the next event of
// a chain has Kube-Chain-Prev equal to the GAP's revision (or, after a
// publisher restart, to the chain's last event), so a consumer restarts
// its chain check after a GAP.
// kbus.progress events record, for an idle bus, the revision the publisher
// has checked through.
//
// # Ordering between streams
//
// For each change the publisher writes KUBE_HISTORY first, then
// KUBE_NODEPODS, then KUBE_STATE. A consumer that snapshots KUBE_STATE and
// then follows KUBE_HISTORY must start from the history sequence it read
// before the snapshot, apply the message at that sequence too, and skip any
// event not newer than what it holds (bus/informer does).
package bus
