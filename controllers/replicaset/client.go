package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers/podwrite"
)

// rsWriter is every ReplicaSet read or write the controller makes through
// the API.
type rsWriter interface {
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// Get reads a ReplicaSet from the API server, not the cache (before
	// adopting: is it still there and not being deleted?).
	Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
}

type writers struct {
	pods  podwrite.Writer
	rsets rsWriter
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{pods: podwrite.NewClient(c), rsets: rsClient{c}}
}

type rsClient struct{ c kubernetes.Interface }

func (r rsClient) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

func (r rsClient) Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}
