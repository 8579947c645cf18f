// Package cronjob is the batch/v1 CronJob controller: at each time a
// CronJob's schedule comes due it creates a Job from the jobTemplate, named
// <cronjob>-<scheduled time in minutes since the epoch> so a time is never
// run twice, honours concurrencyPolicy (Allow, Forbid, Replace),
// startingDeadlineSeconds, suspend and timeZone, keeps status.active,
// lastScheduleTime and lastSuccessfulTime, and deletes the oldest finished
// Jobs beyond the success and failure history limits. It follows upstream's
// cronjob_controllerv2 in behaviour and Events.
//
// The decisions are a pure function of a CronJob, the Jobs it controls and
// the time (plan.go, schedule.go): which Jobs it saw finish or go missing,
// which to delete, whether to create one and for which scheduled time, and
// when to look again. Reconcile (sync.go) reads the bus-fed caches, asks the
// API server only to confirm what the caches may not show yet, applies the
// plan and records Events. Nothing polls: a CronJob is requeued for its next
// scheduled time. The time comes from a Clock, so tests run schedules
// without waiting for them.
package cronjob
