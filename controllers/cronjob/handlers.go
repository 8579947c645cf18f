package cronjob

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/claim"
)

// register adds the informer handlers: a CronJob change enqueues it (a
// changed schedule at its next time, as upstream); a Job change enqueues
// the CronJob that controls it.
func (r *reconciler) register(enqueue func(controllers.Request), enqueueAfter func(controllers.Request, time.Duration)) {
	r.cronJobs.AddHandler(informer.HandlerFuncs[*batchv1.CronJob]{
		AddFunc:    func(cj *batchv1.CronJob) { enqueue(controllers.KeyOf(cj)) },
		UpdateFunc: func(old, cur *batchv1.CronJob) { r.cronJobUpdated(old, cur, enqueue, enqueueAfter) },
		DeleteFunc: func(cj *batchv1.CronJob) { enqueue(controllers.KeyOf(cj)) },
	})
	jobChanged := func(j *batchv1.Job) {
		if cj := r.controllerOf(j); cj != nil {
			enqueue(controllers.KeyOf(cj))
		}
	}
	r.jobs.AddHandler(informer.HandlerFuncs[*batchv1.Job]{
		AddFunc: jobChanged,
		UpdateFunc: func(old, cur *batchv1.Job) {
			if old.ResourceVersion == cur.ResourceVersion {
				return
			}
			if o, c := metav1.GetControllerOf(old), metav1.GetControllerOf(cur); o != nil && (c == nil || o.UID != c.UID) {
				jobChanged(old)
			}
			jobChanged(cur)
		},
		DeleteFunc: jobChanged,
	})
}

// cronJobUpdated syncs a CronJob whose schedule or time zone changed at
// its next scheduled time under the new schedule, so a change does not
// start a Job for a time the old schedule never had; any other change is
// synced now.
func (r *reconciler) cronJobUpdated(old, cur *batchv1.CronJob, enqueue func(controllers.Request), enqueueAfter func(controllers.Request, time.Duration)) {
	key := controllers.KeyOf(cur)
	if old.Spec.Schedule == cur.Spec.Schedule && ptr.Equal(old.Spec.TimeZone, cur.Spec.TimeZone) {
		enqueue(key)
		return
	}
	sched, err := ParseSchedule(cur)
	if err != nil {
		r.log.Debug("unparseable schedule", "cronjob", key.String(), "schedule", cur.Spec.Schedule, "err", err)
		r.rec.Eventf(cur, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cur.Spec.Schedule)
		return
	}
	enqueueAfter(key, r.clock.Wait(untilNext(cur, r.clock.Now(), sched)))
}

// controllerOf returns the cached CronJob controlling j, or nil.
func (r *reconciler) controllerOf(j *batchv1.Job) *batchv1.CronJob {
	return claim.ControllerOf(j, controllerKind.Kind, r.cronJobs.Get)
}
