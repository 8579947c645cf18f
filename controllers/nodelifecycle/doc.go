// Package nodelifecycle is the node lifecycle controller. It watches each
// node's kubelet heartbeats (its Lease in kube-node-lease and its Ready
// condition) and, when none arrived for the grace period, sets the node's
// conditions to Unknown and marks its pods not ready. From the Ready
// condition it keeps the node's taints: unreachable or not-ready as
// NoSchedule at once and as NoExecute at a bounded rate per zone; the
// NoSchedule taints of the pressure conditions and of spec.unschedulable
// too. Pods on a node with NoExecute taints are deleted once their
// tolerations run out, counted from when each taint was added.
//
// As upstream, heartbeats are timed by this controller's clock when it sees
// them change, not by the kubelet's timestamps: a controller that starts, or
// takes over, gives every node a full grace period. When every node of every
// zone is unhealthy the controller assumes the fault is its own view (a
// partition) and neither adds NoExecute taints nor keeps them; when most
// nodes of a zone are, it slows down or stops tainting that zone.
//
// Pure parts: observe (heartbeats seen), staleConditions (what a silent
// node's conditions become), desiredTaints (taints from conditions),
// zoneStateOf and bucket (rates), evictionPlan (which pods go when). The
// Controller wires them to the caches and the API.
package nodelifecycle
