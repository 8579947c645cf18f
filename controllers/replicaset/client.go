package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// podWriter is every pod write the controller makes.
type podWriter interface {
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// Delete deletes a pod if it still has uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	// Patch applies a JSON merge patch.
	Patch(ctx context.Context, namespace, name string, patch []byte) error
}

// rsWriter is every ReplicaSet read or write the controller makes through
// the API.
type rsWriter interface {
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// Get reads a ReplicaSet from the API server, not the cache (before
	// adopting: is it still there and not being deleted?).
	Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
}

type writers struct {
	pods  podWriter
	rsets rsWriter
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{pods: podClient{c}, rsets: rsClient{c}}
}

type podClient struct{ c kubernetes.Interface }

func (p podClient) Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return p.c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

func (p podClient) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return p.c.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (p podClient) Patch(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := p.c.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

type rsClient struct{ c kubernetes.Interface }

func (r rsClient) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

func (r rsClient) Get(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return r.c.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}
