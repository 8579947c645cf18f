package podwrite

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Writer is the pod writes of the ReplicaSet and DaemonSet controllers:
// Client makes them, unit tests fake them.
type Writer interface {
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// Delete deletes a pod if it still has uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	// Patch applies a JSON merge patch.
	Patch(ctx context.Context, namespace, name string, patch []byte) error
}

var _ Writer = Client{}

// Client makes pod writes through a kubernetes.Interface.
type Client struct{ c kubernetes.Interface }

// NewClient returns a Client writing through c.
func NewClient(c kubernetes.Interface) Client { return Client{c: c} }

// Create creates pod in its namespace.
func (p Client) Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return p.c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// Delete deletes a pod if it still has uid (else the API server answers
// Conflict).
func (p Client) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return p.c.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// Patch applies a JSON merge patch.
func (p Client) Patch(ctx context.Context, namespace, name string, patch []byte) error {
	return p.PatchType(ctx, namespace, name, types.MergePatchType, patch)
}

// PatchType applies a patch of type pt.
func (p Client) PatchType(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) error {
	_, err := p.c.CoreV1().Pods(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
	return err
}
