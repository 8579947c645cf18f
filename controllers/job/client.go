package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
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
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) error
}

// jobWriter is every Job read or write the controller makes.
type jobWriter interface {
	// UpdateStatus writes job's status, conditional on its resourceVersion.
	UpdateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
	// Get reads a Job from the API server, not the cache (before adopting).
	Get(ctx context.Context, namespace, name string) (*batchv1.Job, error)
}

type writers struct {
	pods podWriter
	jobs jobWriter
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{pods: podClient{c}, jobs: jobClient{c}}
}

type podClient struct{ c kubernetes.Interface }

func (p podClient) Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return p.c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

func (p podClient) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return p.c.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (p podClient) Patch(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) error {
	_, err := p.c.CoreV1().Pods(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
	return err
}

type jobClient struct{ c kubernetes.Interface }

func (j jobClient) UpdateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return j.c.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

func (j jobClient) Get(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return j.c.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
}
