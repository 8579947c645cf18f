package cronjob

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// nextScheduleDelta pads every requeue past the scheduled time, so a sync
// woken by the queue a little early (clock skew) still finds it due, as
// upstream.
const nextScheduleDelta = 100 * time.Millisecond

// maxMissed is how many missed schedule times are tolerated before the
// controller warns about clock skew or a missing startingDeadlineSeconds.
const maxMissed = 100

// ParseSchedule parses a CronJob's schedule as upstream does: the standard
// five fields or a descriptor (@hourly, @every 1h, ...), evaluated in
// spec.timeZone when it is set and valid. A schedule that names its own zone
// (CRON_TZ= or TZ= prefix) keeps it and ignores spec.timeZone; validation
// refuses that combination on new CronJobs.
func ParseSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	return cron.ParseStandard(scheduleSpec(cj))
}

// scheduleSpec is the spec string handed to the parser.
func scheduleSpec(cj *batchv1.CronJob) string {
	if strings.Contains(cj.Spec.Schedule, "TZ") || cj.Spec.TimeZone == nil {
		return cj.Spec.Schedule
	}
	if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
		return cj.Spec.Schedule
	}
	return "TZ=" + *cj.Spec.TimeZone + " " + cj.Spec.Schedule
}

// missed counts schedule times that passed without a Job.
type missed int

const (
	noneMissed missed = iota
	fewMissed
	manyMissed
)

// errTooFrequent reports a schedule that parses but whose times do not
// advance (the 31st of February), which would loop forever.
var errTooFrequent = errors.New("time difference between two schedules is less than 1 second")

// mostRecent finds the latest scheduled time at or before now that is
// after the CronJob's last scheduled time (or its creation) and, when
// withDeadline, within startingDeadlineSeconds of now. It returns the time
// the search started from, that time (nil if none is due) and how many
// were missed. It steps over long gaps arithmetically instead of walking
// every missed time.
func mostRecent(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, withDeadline bool) (time.Time, *time.Time, missed, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		deadline := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second)
		if deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	if now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	if now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return earliest, nil, noneMissed, errTooFrequent
	}
	count := int64(now.Sub(t1).Seconds())/interval + 1
	// Jump to about two intervals before the last due time, then let the
	// schedule find the exact times (irregular schedules such as
	// "30 6-16/4 * * 1-5" are not evenly spaced).
	start := t1.Add(time.Duration((count-2)*interval) * time.Second)
	var latest time.Time
	for t := sched.Next(start); !t.After(now); t = sched.Next(t) {
		latest = t
	}
	m := fewMissed
	if count > maxMissed {
		m = manyMissed
	}
	if latest.IsZero() {
		return earliest, nil, m, nil
	}
	return earliest, &latest, m, nil
}

// untilNext is how long after now the CronJob must be synced again: at its
// next scheduled time, plus nextScheduleDelta.
func untilNext(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Duration {
	earliest, latest, m, err := mostRecent(cj, now, sched, false)
	var from time.Time
	switch {
	case err != nil:
		from = now
	case latest != nil:
		from = *latest
	case m == noneMissed:
		from = earliest
	default:
		from = now
	}
	return sched.Next(from).Add(nextScheduleDelta).Sub(now)
}

// JobName is the name of the Job for a scheduled time: the CronJob's name
// and the time in minutes since the epoch.
func JobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
