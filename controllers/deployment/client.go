package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// rsWriter is every ReplicaSet write the controller makes, and the one
// uncached read (resolving a name clash on create).
type rsWriter interface {
	Create(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// Update writes spec and metadata, pinned to rs.ResourceVersion.
	Update(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// Patch applies a JSON merge patch (owner references).
	Patch(ctx context.Context, namespace, name string, patch []byte) (*appsv1.ReplicaSet, error)
	// Delete deletes a ReplicaSet if it still has uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
}

// deploymentWriter is every Deployment write the controller makes, and the
// uncached read before adopting.
type deploymentWriter interface {
	UpdateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	// Patch applies a JSON merge patch (the revision annotation).
	Patch(ctx context.Context, namespace, name string, patch []byte) (*appsv1.Deployment, error)
	Get(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
}

type writers struct {
	rsets rsWriter
	deps  deploymentWriter
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{rsets: rsClient{c}, deps: deploymentClient{c}}
}

type rsClient struct{ c kubernetes.Interface }

func (r rsClient) Create(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

func (r rsClient) Update(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

func (r rsClient) Patch(ctx context.Context, namespace, name string, patch []byte) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

func (r rsClient) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return r.c.AppsV1().ReplicaSets(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (r rsClient) Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

type deploymentClient struct{ c kubernetes.Interface }

func (d deploymentClient) UpdateStatus(ctx context.Context, dep *appsv1.Deployment) (*appsv1.Deployment, error) {
	return d.c.AppsV1().Deployments(dep.Namespace).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
}

func (d deploymentClient) Patch(ctx context.Context, namespace, name string, patch []byte) (*appsv1.Deployment, error) {
	return d.c.AppsV1().Deployments(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

func (d deploymentClient) Get(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return d.c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
}
