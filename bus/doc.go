// Package bus is kubebus's event bus on NATS JetStream: the API server
// republishes every committed etcd revision here and every other component
// reads the cluster's state from it. Only bus packages import nats.go.
package bus
