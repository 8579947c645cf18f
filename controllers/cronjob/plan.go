package cronjob

import (
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// controllerKind is the kind in the controller references of the Jobs.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Event is an Event to record on the CronJob.
type Event struct {
	Type, Reason, Message string
}

// Input is what one sync decides from.
type Input struct {
	// CronJob as read; Plan does not modify it.
	CronJob *batchv1.CronJob
	// Jobs are the Jobs the CronJob controls.
	Jobs []*batchv1.Job
	Now  time.Time
	// Gone holds the active references the API server confirmed no longer
	// exist. An active reference missing from Jobs and from Gone is kept:
	// the cache may not show a Job just created.
	Gone map[types.UID]bool
}

// Plan is what a sync does, in order: record Events, prune history,
// delete the Jobs being replaced, create the Job, write Status, requeue.
type Plan struct {
	// Status is the CronJob's status after what was observed: finished
	// and missing Jobs out of active, lastSuccessfulTime advanced.
	// Deleting and creating Jobs change it further (see Deleted, Created).
	Status batchv1.CronJobStatus
	Events []Event
	// Prune are finished Jobs beyond the history limits, oldest first.
	Prune []*batchv1.Job
	// Replace are the active Jobs to delete, with Background propagation,
	// before Create (concurrencyPolicy Replace).
	Replace []corev1.ObjectReference
	// Create is the Job to create for the time Scheduled, or nil.
	Create    *batchv1.Job
	Scheduled time.Time
	// Requeue is when to sync again, in the controller's clock; nil means
	// only when something changes (suspended, deleted, bad schedule).
	Requeue *time.Duration
}

// NewPlan decides one sync of a CronJob, as upstream's syncCronJob and
// cleanupFinishedJobs do.
func NewPlan(in Input) Plan {
	cj := in.CronJob
	p := Plan{Status: *cj.Status.DeepCopy()}
	p.observe(cj, in.Jobs, in.Gone)
	p.Prune = prune(cj, in.Jobs)

	if cj.DeletionTimestamp != nil {
		return p // being deleted: only the status is kept
	}
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			p.warn("UnknownTimeZone", "invalid timeZone: %q: %s", *cj.Spec.TimeZone, err)
			return p
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return p
	}
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		p.warn("UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := ParseSchedule(cj)
	if err != nil {
		p.warn("UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return p
	}
	// The rest judges the status as observed.
	cur := cj.DeepCopy()
	cur.Status = p.Status
	now := in.Now
	requeue := func(c *batchv1.CronJob) *time.Duration {
		d := untilNext(c, now, sched)
		return &d
	}

	_, due, m, err := mostRecent(cur, now, sched, true)
	if due == nil || due.After(now) {
		if err != nil {
			p.warn("InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
			return p
		}
		p.Requeue = requeue(cur)
		return p
	}
	if m == manyMissed {
		p.warn("TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	scheduled := *due
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil && scheduled.Add(time.Duration(*sds)*time.Second).Before(now) {
		p.warn("MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		p.Requeue = requeue(cur)
		return p
	}
	name := JobName(cj, scheduled)
	if slices.ContainsFunc(p.Status.Active, func(r corev1.ObjectReference) bool { return r.Name == name && r.Namespace == cj.Namespace }) ||
		(p.Status.LastScheduleTime != nil && p.Status.LastScheduleTime.Time.Equal(scheduled)) {
		p.Requeue = requeue(cur)
		return p // this time was run already
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(p.Status.Active) > 0 {
		p.normal("JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		p.Requeue = requeue(cur)
		return p
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		p.Replace = slices.Clone(p.Status.Active)
	}
	p.Create = JobFor(cj, scheduled)
	p.Scheduled = scheduled
	next := cur.DeepCopy()
	next.Status.LastScheduleTime = &metav1.Time{Time: scheduled}
	p.Requeue = requeue(next)
	return p
}

// observe takes finished Jobs out of the active list (SawCompletedJob),
// advances lastSuccessfulTime, drops active references to Jobs confirmed
// gone (MissingJob) and warns about unfinished Jobs the CronJob controls
// but does not list (UnexpectedJob).
func (p *Plan) observe(cj *batchv1.CronJob, jobs []*batchv1.Job, gone map[types.UID]bool) {
	seen := make(map[types.UID]bool, len(jobs))
	for _, j := range jobs {
		seen[j.UID] = true
		active := p.isActive(j.UID)
		cond, finished := finishedCondition(j)
		switch {
		case !finished && !active:
			p.warn("UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case finished:
			if active {
				p.removeActive(j.UID)
				p.normal("SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, cond)
			}
			if cond == batchv1.JobComplete && j.Status.CompletionTime != nil {
				if last := p.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
					p.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
				}
			}
		}
	}
	for _, ref := range slices.Clone(p.Status.Active) {
		if !seen[ref.UID] && gone[ref.UID] {
			p.normal("MissingJob", "Active job went missing: %v", ref.Name)
			p.removeActive(ref.UID)
		}
	}
}

func (p *Plan) isActive(uid types.UID) bool {
	return slices.ContainsFunc(p.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

func (p *Plan) removeActive(uid types.UID) {
	p.Status.Active = removeActive(p.Status.Active, uid)
}

func (p *Plan) warn(reason, format string, args ...any) {
	p.Events = append(p.Events, Event{Type: corev1.EventTypeWarning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (p *Plan) normal(reason, format string, args ...any) {
	p.Events = append(p.Events, Event{Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// removeActive returns active without the reference to uid.
func removeActive(active []corev1.ObjectReference, uid types.UID) []corev1.ObjectReference {
	return slices.DeleteFunc(slices.Clone(active), func(r corev1.ObjectReference) bool { return r.UID == uid })
}

// Created records a Job created (or found already created) for the time
// scheduled in status: it becomes active and the time the last scheduled.
func Created(st *batchv1.CronJobStatus, job *batchv1.Job, scheduled time.Time) {
	st.Active = append(st.Active, corev1.ObjectReference{
		Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(),
		Namespace: job.Namespace, Name: job.Name, UID: job.UID, ResourceVersion: job.ResourceVersion,
	})
	st.LastScheduleTime = &metav1.Time{Time: scheduled}
}

// Deleted records a Job deleted: it is no longer active.
func Deleted(st *batchv1.CronJobStatus, uid types.UID) {
	st.Active = removeActive(st.Active, uid)
}

// Stale reports whether the CronJob controls an unfinished Job it does
// not list as active: its status may be older than the Jobs the cache
// shows (a Job just created), so it is read again before planning.
func Stale(cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	for _, j := range jobs {
		if _, finished := finishedCondition(j); !finished &&
			!slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == j.UID }) {
			return true
		}
	}
	return false
}

// Unseen are the CronJob's active references to Jobs not in jobs: each is
// looked up at the API server before planning (Input.Gone).
func Unseen(cj *batchv1.CronJob, jobs []*batchv1.Job) []corev1.ObjectReference {
	var out []corev1.ObjectReference
	for _, ref := range cj.Status.Active {
		if !slices.ContainsFunc(jobs, func(j *batchv1.Job) bool { return j.UID == ref.UID }) {
			out = append(out, ref)
		}
	}
	return out
}

// JobFor makes the Job for a scheduled time from the CronJob's template:
// its labels and annotations, the scheduled-timestamp annotation (in the
// CronJob's time zone), the deterministic name and a controller reference.
func JobFor(cj *batchv1.CronJob, scheduled time.Time) *batchv1.Job {
	labels := make(map[string]string, len(cj.Spec.JobTemplate.Labels))
	for k, v := range cj.Spec.JobTemplate.Labels {
		labels[k] = v
	}
	annotations := make(map[string]string, len(cj.Spec.JobTemplate.Annotations)+1)
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	loc := time.UTC
	if cj.Spec.TimeZone != nil {
		if l, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			loc = l
		}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: JobName(cj, scheduled), Namespace: cj.Namespace,
			Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job
}

// finishedCondition returns the condition (Complete or Failed) that ends a
// Job, and whether it has one.
func finishedCondition(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

// prune returns the finished Jobs beyond successfulJobsHistoryLimit and
// failedJobsHistoryLimit, the earliest started first.
func prune(cj *batchv1.CronJob, jobs []*batchv1.Job) []*batchv1.Job {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch cond, _ := finishedCondition(j); cond {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	var out []*batchv1.Job
	if l := cj.Spec.SuccessfulJobsHistoryLimit; l != nil {
		out = append(out, oldest(succeeded, int(*l))...)
	}
	if l := cj.Spec.FailedJobsHistoryLimit; l != nil {
		out = append(out, oldest(failed, int(*l))...)
	}
	return out
}

// oldest returns the Jobs beyond the keep most recently started ones.
func oldest(jobs []*batchv1.Job, keep int) []*batchv1.Job {
	n := len(jobs) - keep
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(jobs)
	slices.SortStableFunc(sorted, byStartTime)
	return sorted[:n]
}

// byStartTime orders Jobs by status.startTime, unstarted last, then name.
func byStartTime(a, b *batchv1.Job) int {
	as, bs := a.Status.StartTime, b.Status.StartTime
	switch {
	case as == nil && bs != nil:
		return 1
	case as != nil && bs == nil:
		return -1
	case as != nil && !as.Equal(bs):
		return as.Time.Compare(bs.Time)
	}
	return strings.Compare(a.Name, b.Name)
}
