package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers/podwrite"
)

// podWriter is every pod write the controller makes.
type podWriter interface {
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// Delete deletes a pod if it still has uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	// PatchType applies a patch of type pt.
	PatchType(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) error
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
	return writers{pods: podwrite.NewClient(c), jobs: jobClient{c}}
}

type jobClient struct{ c kubernetes.Interface }

func (j jobClient) UpdateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return j.c.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

func (j jobClient) Get(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return j.c.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
}
