package cronjob

import (
	"sync"
	"time"
)

// Clock is the controller's time: Now is when schedules are judged against,
// and Wait turns a span of that time into the real time the work queue
// waits before syncing a CronJob again.
type Clock interface {
	Now() time.Time
	Wait(d time.Duration) time.Duration
}

// RealClock is the wall clock.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// Wait is d.
func (RealClock) Wait(d time.Duration) time.Duration { return d }

// FastClock runs Speed times faster than the wall clock from Start on: a
// schedule's minute passes in a sixtieth of the time at Speed 60. It exists
// for tests that run the real controller-manager process
// (--cronjob-clock-speed); CronJobs, Jobs and Events it writes carry the
// fast times.
type FastClock struct {
	Start time.Time
	Speed float64
}

// Now is Start plus the wall time since Start, times Speed.
func (c FastClock) Now() time.Time {
	return c.Start.Add(time.Duration(float64(time.Since(c.Start)) * c.Speed))
}

// Wait is d divided by Speed.
func (c FastClock) Wait(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Speed)
}

// ClockWithSpeed is the wall clock at speed 1 (or 0, unset) and a
// FastClock starting now otherwise.
func ClockWithSpeed(speed float64) Clock {
	if speed <= 0 || speed == 1 {
		return RealClock{}
	}
	return FastClock{Start: time.Now(), Speed: speed}
}

// FakeClock is a clock tests set by hand; Wait is the identity.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a fake clock reading now.
func NewFakeClock(now time.Time) *FakeClock { return &FakeClock{now: now} }

// Now returns the time last set.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Step moves the clock forward by d.
func (c *FakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Wait is d.
func (c *FakeClock) Wait(d time.Duration) time.Duration { return d }

var (
	_ Clock = RealClock{}
	_ Clock = FastClock{}
	_ Clock = (*FakeClock)(nil)
)
