package daemonset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers/history"
)

// podWriter is every pod write the controller makes.
type podWriter interface {
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// Delete deletes a pod if it still has uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	// Patch applies a JSON merge patch.
	Patch(ctx context.Context, namespace, name string, patch []byte) error
}

// dsWriter is every DaemonSet read or write the controller makes through
// the API.
type dsWriter interface {
	UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error)
	// Get reads a DaemonSet from the API server, not the cache.
	Get(ctx context.Context, namespace, name string) (*appsv1.DaemonSet, error)
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{pods: podClient{c}, dsets: dsClient{c}, revs: history.NewClient(c)}
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

type dsClient struct{ c kubernetes.Interface }

func (d dsClient) UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	return d.c.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
}

func (d dsClient) Get(ctx context.Context, namespace, name string) (*appsv1.DaemonSet, error) {
	return d.c.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
}
