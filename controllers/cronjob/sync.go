package cronjob

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
)

// minRequeue bounds how soon a CronJob is synced again, so a requeue
// computed a hair in the past does not spin.
const minRequeue = 10 * time.Millisecond

// Reconcile syncs one CronJob: confirm what the cache may not show yet,
// plan, record the Events, prune the history, replace or create a Job,
// write the status, and requeue for the next scheduled time.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	cj, ok := r.cronJobs.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	jobs := r.controlled(cj)
	if Stale(cj, jobs) {
		fresh, err := r.w.cronJobs.Get(ctx, cj.Namespace, cj.Name)
		switch {
		case apierrors.IsNotFound(err):
			return controllers.Result{}, nil
		case err != nil:
			return controllers.Result{}, fmt.Errorf("reading cronjob %s: %w", req, err)
		case fresh.UID == cj.UID:
			cj = fresh
		}
	}
	gone := map[types.UID]bool{}
	for _, ref := range Unseen(cj, jobs) {
		j, err := r.w.jobs.Get(ctx, ref.Namespace, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			gone[ref.UID] = true
		case err != nil:
			return controllers.Result{}, fmt.Errorf("reading job %s/%s: %w", ref.Namespace, ref.Name, err)
		case j.UID != ref.UID:
			gone[ref.UID] = true // deleted, and another made under its name
		}
	}

	p := NewPlan(Input{CronJob: cj, Jobs: jobs, Now: r.clock.Now(), Gone: gone})
	for _, e := range p.Events {
		r.rec.Event(cj, e.Type, e.Reason, e.Message)
	}
	st := p.Status
	for _, j := range p.Prune {
		if r.deleteJob(ctx, cj, j.Namespace, j.Name, j.UID) == nil {
			Deleted(&st, j.UID)
		}
	}
	syncErr := r.replaceAndCreate(ctx, cj, &p, &st)
	if !equality.Semantic.DeepEqual(cj.Status, st) {
		upd := cj.DeepCopy()
		upd.Status = st
		if _, err := r.w.cronJobs.UpdateStatus(ctx, upd); err != nil && !apierrors.IsNotFound(err) {
			return controllers.Result{}, fmt.Errorf("updating the status of cronjob %s: %w", req, err)
		}
	}
	if syncErr != nil {
		return controllers.Result{}, syncErr
	}
	if p.Requeue == nil {
		return controllers.Result{}, nil
	}
	return controllers.Result{RequeueAfter: max(r.clock.Wait(*p.Requeue), minRequeue)}, nil
}

// replaceAndCreate deletes the Jobs the plan replaces and creates its Job,
// recording both in st.
func (r *reconciler) replaceAndCreate(ctx context.Context, cj *batchv1.CronJob, p *Plan, st *batchv1.CronJobStatus) error {
	if p.Create == nil {
		return nil
	}
	for _, ref := range p.Replace {
		err := r.deleteJob(ctx, cj, ref.Namespace, ref.Name, ref.UID)
		switch {
		case apierrors.IsNotFound(err):
			Deleted(st, ref.UID) // already gone
		case err != nil:
			return fmt.Errorf("could not replace job %s/%s: %w", ref.Namespace, ref.Name, err)
		default:
			Deleted(st, ref.UID)
		}
	}
	job, err := r.w.jobs.Create(ctx, p.Create)
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return fmt.Errorf("creating job %s: %w", p.Create.Name, err)
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync whose status write was lost, or by
		// someone else: take it as active only if this CronJob controls it.
		existing, err := r.w.jobs.Get(ctx, p.Create.Namespace, p.Create.Name)
		if err != nil {
			return fmt.Errorf("reading job %s: %w", p.Create.Name, err)
		}
		if !metav1.IsControlledBy(existing, cj) || activeUID(st, existing.UID) {
			return nil
		}
		r.log.Info("job already exists", "cronjob", controllers.KeyOf(cj).String(), "job", existing.Name)
		job = existing
	case err != nil:
		r.rec.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return fmt.Errorf("creating job %s: %w", p.Create.Name, err)
	default:
		r.log.Debug("created job", "cronjob", controllers.KeyOf(cj).String(), "job", job.Name)
		r.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", job.Name)
	}
	Created(st, job, p.Scheduled)
	return nil
}

// deleteJob deletes a Job the CronJob controls and records the outcome.
// A Job already gone is reported as NotFound without an Event.
func (r *reconciler) deleteJob(ctx context.Context, cj *batchv1.CronJob, namespace, name string, uid types.UID) error {
	err := r.w.jobs.Delete(ctx, namespace, name, uid)
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		r.rec.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		r.log.Error("deleting job", "cronjob", controllers.KeyOf(cj).String(), "job", name, "err", err)
		return err
	}
	r.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", name)
	return nil
}

// controlled returns the cached Jobs cj controls.
func (r *reconciler) controlled(cj *batchv1.CronJob) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range r.jobs.ByIndex(cache.ByOwnerUID, string(cj.UID)) {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == cj.UID && j.Namespace == cj.Namespace {
			out = append(out, j)
		}
	}
	return out
}

func activeUID(st *batchv1.CronJobStatus, uid types.UID) bool {
	for _, r := range st.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}
