// Package resourcequota is the quota controller: it keeps each
// ResourceQuota's status.hard equal to spec.hard and status.used equal to
// what the namespace really uses, counted from the controller-manager's
// bus-fed caches with the evaluators of apiserver/quota. The ResourceQuota
// admission plugin only ever raises status.used; this controller brings it
// back down when objects are deleted or pods finish, and recomputes every
// quota periodically (every five minutes by default, as upstream).
//
// The resources of CustomResourceDefinitions are added while it runs
// (Controller.AddResource), as upstream's quota monitor follows discovery,
// so that count/<resource>.<group> of a custom resource is recounted and
// replenished like that of a built-in one.
package resourcequota
