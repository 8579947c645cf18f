// Package record writes what a node's proxy programmed into the node's
// proxy Lease, through the API server: kube-node-lease/kube-proxy-<node>,
// annotated as bus/lifecycle describes with the highest bus revision the
// programmed rules reflect and when they were programmed, so that the step
// is on the bus for `kubectl why`. It is package proxy's Recorder.
package record

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubebus/kubebus/bus/lifecycle"
)

// FieldManager names the proxy as the writer of its Lease (what
// `kubebus tap` and `kubebus why` show as WHO).
const FieldManager = "kube-proxy"

// Lease records into one node's proxy Lease.
type Lease struct {
	client kubernetes.Interface
	node   string

	mu   sync.Mutex
	last *coordinationv1.Lease // as last written; nil: read it first
}

// New returns the recorder of node's proxy, writing with client (whose
// identity needs get, create and update on leases in kube-node-lease:
// system:kube-proxy has them).
func New(client kubernetes.Interface, node string) *Lease {
	return &Lease{client: client, node: node}
}

// RecordProgrammed writes rev and at into the Lease and renews it,
// creating it (held by the node) when it is missing. The Lease as last
// written is updated without reading it again; on a conflict it is read
// again and the write retried.
func (l *Lease) RecordProgrammed(ctx context.Context, rev int64, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	leases := l.client.CoordinationV1().Leases(lifecycle.ProxyLeaseNamespace)
	name := lifecycle.ProxyLeaseName(l.node)
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, retriable, func() error {
		cur := l.last
		if cur == nil {
			got, err := leases.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				now := metav1.NowMicro()
				lease := &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lifecycle.ProxyLeaseNamespace},
					Spec:       coordinationv1.LeaseSpec{HolderIdentity: &l.node, AcquireTime: &now, RenewTime: &now},
				}
				lifecycle.SetProgrammed(lease, rev, at)
				created, err := leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: FieldManager})
				if err == nil {
					l.last = created
				}
				return err
			case err != nil:
				return err
			}
			cur = got
		}
		upd := cur.DeepCopy()
		lifecycle.SetProgrammed(upd, rev, at)
		now := metav1.NowMicro()
		upd.Spec.RenewTime = &now
		written, err := leases.Update(ctx, upd, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil {
			l.last = nil // read it again
			if apierrors.IsNotFound(err) {
				return apierrors.NewConflict(coordinationv1.Resource("leases"), name, err) // deleted meanwhile: create it again
			}
			return err
		}
		l.last = written
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording revision %d in lease %s/%s: %w", rev, lifecycle.ProxyLeaseNamespace, name, err)
	}
	return nil
}
