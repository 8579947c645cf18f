// Package informer keeps a component's cache of one resource from the bus:
// a durable JetStream consumer feeds an indexed cache and typed handlers.
// It replaces client-go informers; it never calls the API server.
//
// # How it loads and follows
//
//  1. It reads the live stream's last sequence H0 (KUBE_HISTORY, or
//     KUBE_NODEPODS for a node's pods), then the latest event of every
//     object from KUBE_STATE. Deletions there are tombstones: not objects,
//     but their revisions keep older events from bringing objects back.
//     Because the publisher stores an event's state just after its history
//     message, message H0 itself is applied too.
//  2. It recreates its durable pull consumer at H0+1 (the cache is new, so
//     the consumer restarts with it) and applies ADDED, MODIFIED and
//     DELETED events, skipping any whose revision the cache already holds.
//  3. Every live event names its chain predecessor (Kube-Chain-Prev). A
//     broken chain, a GAP event, or unread messages evicted by the stream's
//     limits mean events were missed: the informer counts it, logs it, and
//     rebuilds the cache from KUBE_STATE, telling the handlers what changed.
//  4. When the pull fails (NATS down or restarted) it reopens the same
//     durable and skips redeliveries it has applied; when a delivery was
//     lost it recreates the durable after the last message applied.
//
// Malformed messages are counted, acknowledged and skipped.
//
// # The caller's duties
//
//   - Add handlers before Run; Run until the component stops.
//   - Wait for HasSynced (or WaitForSync) before acting on the cache.
//   - Handlers run synchronously, in event order, on Run's goroutine: keep
//     them short (enqueue a key), and do not block on the informer.
//   - Objects from the cache and handlers are shared: never modify them.
//   - Give each process its own durable: two processes of one component
//     with the same selection need distinct Config.Instance values.
//
// Objects in the cache carry their event's revision as
// metadata.resourceVersion (the stored value has none). The object comes
// as stored, JSON or protobuf (internal/storedobj decodes either).
package informer
