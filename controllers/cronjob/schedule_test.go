package cronjob

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func cronJob(schedule string, created string, mod ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "cj", Namespace: "ns", UID: "cj-uid", CreationTimestamp: metav1.NewTime(at(created))},
		Spec:       batchv1.CronJobSpec{Schedule: schedule, ConcurrencyPolicy: batchv1.AllowConcurrent},
	}
	for _, m := range mod {
		m(cj)
	}
	return cj
}

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	from := at("2026-03-10T10:17:30Z")
	for _, tc := range []struct {
		name, schedule string
		timeZone       *string
		next           time.Time
		wantErr        bool
	}{
		{name: "every minute", schedule: "*/1 * * * *", next: at("2026-03-10T10:18:00Z")},
		{name: "five fields", schedule: "30 6 * * 1-5", next: at("2026-03-11T06:30:00Z")},
		{name: "descriptor", schedule: "@hourly", next: at("2026-03-10T11:00:00Z")},
		{name: "every", schedule: "@every 10m", next: at("2026-03-10T10:27:30Z")},
		{name: "time zone field", schedule: "0 9 * * *", timeZone: ptr.To("Asia/Tokyo"), next: at("2026-03-11T00:00:00Z")},
		{name: "zone in the schedule wins", schedule: "CRON_TZ=UTC 0 9 * * *", timeZone: ptr.To("Asia/Tokyo"), next: at("2026-03-11T09:00:00Z")},
		{name: "unknown zone is ignored here", schedule: "0 9 * * *", timeZone: ptr.To("Mars/Olympus"), next: at("2026-03-11T09:00:00Z")},
		{name: "six fields refused", schedule: "0 * * * * *", wantErr: true},
		{name: "garbage", schedule: "every day", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := cronJob(tc.schedule, "2026-01-01T00:00:00Z", func(c *batchv1.CronJob) { c.Spec.TimeZone = tc.timeZone })
			s, err := ParseSchedule(cj)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseSchedule(%q) succeeded", tc.schedule)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(from); !got.Equal(tc.next) {
				t.Errorf("next after %s = %s, want %s", from, got.UTC(), tc.next)
			}
		})
	}
}

func TestMostRecent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		cj           *batchv1.CronJob
		now          string
		withDeadline bool
		want         string // "" for none
		missed       missed
		err          error
	}{
		{name: "not due yet", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z"), now: "2026-01-01T10:00:59Z"},
		{name: "first time due", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z"), now: "2026-01-01T10:01:00Z", want: "2026-01-01T10:01:00Z"},
		{name: "after the last scheduled", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", lastScheduled("2026-01-01T10:01:00Z")),
			now: "2026-01-01T10:01:40Z"},
		{name: "a few missed: the latest", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z"), now: "2026-01-01T10:05:10Z",
			want: "2026-01-01T10:05:00Z", missed: fewMissed},
		{name: "many missed", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z"), now: "2026-01-01T13:00:10Z",
			want: "2026-01-01T13:00:00Z", missed: manyMissed},
		{name: "deadline narrows the search", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", deadline(30)), withDeadline: true,
			now: "2026-01-01T13:00:10Z", want: "2026-01-01T13:00:00Z"},
		{name: "deadline passed", cj: cronJob("0 * * * *", "2026-01-01T10:00:30Z", deadline(30)), withDeadline: true,
			now: "2026-01-01T11:00:40Z"},
		{name: "irregular schedule", cj: cronJob("30 6-16/4 * * 1-5", "2026-01-05T00:00:00Z"), now: "2026-01-07T12:00:00Z",
			want: "2026-01-07T10:30:00Z", missed: fewMissed},
		{name: "impossible date", cj: cronJob("59 23 31 2 *", "2026-01-01T00:00:00Z"), now: "2036-01-01T00:00:00Z", err: errTooFrequent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSchedule(tc.cj)
			if err != nil {
				t.Fatal(err)
			}
			_, got, m, err := mostRecent(tc.cj, at(tc.now), s, tc.withDeadline)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("due %s, want none", got.UTC())
			case tc.want != "" && (got == nil || !got.Equal(at(tc.want))):
				t.Errorf("due %v, want %s", got, tc.want)
			}
			if m != tc.missed {
				t.Errorf("missed = %d, want %d", m, tc.missed)
			}
		})
	}
}

func TestUntilNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cj   *batchv1.CronJob
		now  string
		want time.Duration
	}{
		{name: "new", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z"), now: "2026-01-01T10:00:40Z", want: 20*time.Second + nextScheduleDelta},
		{name: "just ran", cj: cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", lastScheduled("2026-01-01T10:01:00Z")),
			now: "2026-01-01T10:01:00.5Z", want: 59500*time.Millisecond + nextScheduleDelta},
		{name: "missed several", cj: cronJob("*/5 * * * *", "2026-01-01T10:00:30Z", lastScheduled("2026-01-01T10:05:00Z")),
			now: "2026-01-01T10:31:00Z", want: 4*time.Minute + nextScheduleDelta},
		{name: "in a time zone", cj: cronJob("0 9 * * *", "2026-01-01T00:00:00Z", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/Berlin") }),
			now: "2026-01-01T07:00:00Z", want: time.Hour + nextScheduleDelta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSchedule(tc.cj)
			if err != nil {
				t.Fatal(err)
			}
			if got := untilNext(tc.cj, at(tc.now), s); got != tc.want {
				t.Errorf("untilNext = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestJobName(t *testing.T) {
	t.Parallel()
	cj := cronJob("*/1 * * * *", "2026-01-01T00:00:00Z")
	if got, want := JobName(cj, at("2026-01-01T10:01:00Z")), "cj-29454361"; got != want {
		t.Errorf("JobName = %q, want %q", got, want)
	}
}

func TestFastClock(t *testing.T) {
	t.Parallel()
	c := FastClock{Start: time.Now().Add(-time.Second), Speed: 60}
	if d := c.Now().Sub(c.Start); d < 59*time.Second || d > 2*time.Minute {
		t.Errorf("a second at speed 60 read as %s", d)
	}
	if got := c.Wait(time.Minute); got != time.Second {
		t.Errorf("Wait(1m) = %s, want 1s", got)
	}
}

func lastScheduled(s string) func(*batchv1.CronJob) {
	return func(c *batchv1.CronJob) { c.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(s))) }
}

func deadline(sec int64) func(*batchv1.CronJob) {
	return func(c *batchv1.CronJob) { c.Spec.StartingDeadlineSeconds = &sec }
}
