// Package disruption is the disruption controller (upstream's
// "disruption"): it keeps the status of every PodDisruptionBudget — how
// many of its pods are healthy, how many must be, how many are expected,
// and so how many may be disrupted now — which the API server's
// pods/eviction subresource reads and decrements.
//
// The pure core is Compute (a budget, its pods, the scale of their
// controllers and the time in; the status out); the controller around it
// reads the caches and writes status through the API. A second queue
// sets back to False the DisruptionTarget condition of pods an eviction
// marked but did not delete within two minutes (staleDisruption).
//
// The caller's duties: give it the caches of budgets, pods, ReplicaSets,
// Deployments and StatefulSets (New adds handlers, so call it before they
// run), and run the result while leading.
package disruption
