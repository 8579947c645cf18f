package cronjob

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// jobWriter is every Job read or write the controller makes through the API.
type jobWriter interface {
	Create(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
	// Get reads a Job from the API server, not the cache.
	Get(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	// Delete deletes a Job if it still has uid, with Background
	// propagation: the garbage collector deletes its pods.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
}

// cronJobWriter is every CronJob read or write the controller makes
// through the API.
type cronJobWriter interface {
	// Get reads a CronJob from the API server, not the cache.
	Get(ctx context.Context, namespace, name string) (*batchv1.CronJob, error)
	UpdateStatus(ctx context.Context, cj *batchv1.CronJob) (*batchv1.CronJob, error)
}

type writers struct {
	jobs     jobWriter
	cronJobs cronJobWriter
}

func clientWriters(c kubernetes.Interface) writers {
	return writers{jobs: jobClient{c}, cronJobs: cronJobClient{c}}
}

type jobClient struct{ c kubernetes.Interface }

func (j jobClient) Create(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return j.c.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
}

func (j jobClient) Get(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return j.c.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (j jobClient) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	return j.c.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}})
}

type cronJobClient struct{ c kubernetes.Interface }

func (c cronJobClient) Get(ctx context.Context, namespace, name string) (*batchv1.CronJob, error) {
	return c.c.BatchV1().CronJobs(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c cronJobClient) UpdateStatus(ctx context.Context, cj *batchv1.CronJob) (*batchv1.CronJob, error) {
	return c.c.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{})
}
