package daemonset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers/history"
	"github.com/kubebus/kubebus/controllers/podwrite"
)

// dsWriter is every DaemonSet read or write the controller makes through
// the API.
type dsWriter interface {
	UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error)
	// Get reads a DaemonSet from the API server, not the cache.
	Get(ctx context.Context, namespace, name string) (*appsv1.DaemonSet, error)
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{pods: podwrite.NewClient(c), dsets: dsClient{c}, revs: history.NewClient(c)}
}

type dsClient struct{ c kubernetes.Interface }

func (d dsClient) UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	return d.c.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
}

func (d dsClient) Get(ctx context.Context, namespace, name string) (*appsv1.DaemonSet, error) {
	return d.c.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
}
