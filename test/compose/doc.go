// Package compose tests the HA stack of deploy/compose end to end: it
// builds the images, brings the stack up from nothing under a project
// name of its own, runs the seed story (a Deployment spread over both
// nodes behind a Service, kubectl logs and rollout through the load
// balancer) and the chaos sequence (SIGKILL of an etcd member, the NATS
// stream leader, an API server, the leading controller-manager and
// scheduler and a node; a paused node; a partitioned etcd member) under
// a steady write load, checking after each step that nothing committed
// was lost and everything converged, then tears the stack down and
// checks nothing of it is left.
//
// The tests carry the build tag "compose" so that `make test` does not
// run them (the stack needs the fixed subnet 172.28.0.0/24 and several
// minutes); `make compose-test` does:
//
//	go test -tags compose -run TestIntegrationCompose ./test/compose/
package compose
