package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// An Allocator gives objects of one resource values that must be unique
// across objects, such as a Service's cluster IP and node ports. Each value
// is a key of its own, claimed and released in the same etcd transaction
// as the object's write, so no two objects ever hold one value. When the
// transaction loses a claim to another writer the server calls Allocate
// again on a fresh copy of the object.
type Allocator interface {
	// Allocate completes obj, about to be written (old is the stored object
	// on an update, nil on a create), and returns the keys to claim and
	// release with the write. Errors that are API statuses (a 422 for a
	// value already taken) reach the client as they are.
	Allocate(ctx context.Context, obj, old runtime.Object) (storage.Side, error)
	// Release returns the keys deleting obj frees.
	Release(obj runtime.Object) storage.Side
}

// maxClaimAttempts bounds the retries of a write whose claim lost a race.
const maxClaimAttempts = 16

var servicesGR = corev1.SchemeGroupVersion.WithResource("services").GroupResource()

// defaultAllocators gives Services the default cluster IP and node port
// ranges.
func defaultAllocators(store *storage.Store) (map[schema.GroupResource]Allocator, error) {
	a, err := servicealloc.New(servicealloc.Config{Store: store})
	if err != nil {
		return nil, err
	}
	return map[schema.GroupResource]Allocator{servicesGR: a}, nil
}

// allocator returns the resource's allocator, or nil.
func (s *Server) allocator(res *resource.Resource) Allocator {
	return s.cfg.Allocators[res.GroupResource()]
}
