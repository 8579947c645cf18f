// Package apiserver is kubebus's Kubernetes-compatible REST API server.
//
// It is the only component that talks to etcd (through apiserver/storage) and
// the only writer: every other component reads from the bus and writes here.
// Handlers are generic over the resource table (apiserver/resource); each
// request is parsed into a RequestInfo, authenticated, authorized, and served
// by one file per verb: get.go, list.go, create.go, update.go, patch.go,
// delete.go, watch.go, plus subresources.go for status, scale and binding.
// Every error leaves as a metav1.Status with the HTTP code and reason a
// Kubernetes client expects.
package apiserver
