// Package clocktest is a clock for tests that steps the wall clock the way
// an operator, NTP or a VM resume does: the readings it returns are
// time.Now's, with the wall-clock part moved and the monotonic part left
// alone, exactly as time.Now returns them after the system clock is set.
// Code that measures its durations on the monotonic clock (time.Since,
// Sub between two readings that carry one) sees no step; code that loses
// the monotonic reading (UnixNano, Round(0), UTC, a round trip through a
// record) sees the full step.
//
// It must be used outside testing/synctest bubbles: time.Now carries no
// monotonic reading inside one, so there is nothing to keep apart there.
package clocktest

import (
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Clock returns time.Now's readings moved by two offsets: Advance moves
// both the wall and the monotonic reading (time that passes at once),
// Step moves the wall reading only (the system clock is set). The zero
// Clock is time.Now. It is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	elapsed time.Duration // Advance: both readings
	step    time.Duration // Step: the wall reading only
}

// Now is time.Now with the clock's offsets applied; pass it where the code
// under test takes a func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	elapsed, step := c.elapsed, c.step
	c.mu.Unlock()
	return StepWall(time.Now().Add(elapsed), step)
}

// Step sets the wall clock forward by d (backward when d < 0). d must be
// a whole number of seconds.
func (c *Clock) Step(d time.Duration) {
	if d%time.Second != 0 {
		panic(fmt.Sprintf("clocktest: step %v is not a whole number of seconds", d))
	}
	c.mu.Lock()
	c.step += d
	c.mu.Unlock()
}

// Advance lets d pass at once, on the wall and the monotonic clock alike.
// Timers in the code under test do not see it; it is for code that reads
// the clock and compares readings.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.elapsed += d
	c.mu.Unlock()
}

// StepWall returns t with its wall-clock reading moved by d, a whole
// number of seconds, and its monotonic reading kept. t must carry a
// monotonic reading (a time.Now outside a synctest bubble). It panics if
// the result is not what it should be (should time.Time's layout ever
// change), so a test built on it cannot pass vacuously.
func StepWall(t time.Time, d time.Duration) time.Time {
	if d%time.Second != 0 {
		panic(fmt.Sprintf("clocktest: step %v is not a whole number of seconds", d))
	}
	if t.Round(0) == t {
		panic("clocktest: StepWall of a time without a monotonic reading (inside a synctest bubble?)")
	}
	if d == 0 {
		return t
	}
	// time.Time is {wall uint64, ext int64, loc *Location}; with a
	// monotonic reading, bits 62..30 of wall hold the seconds since 1885
	// and ext the monotonic reading. Move the seconds only.
	const nsecShift, secMask = 30, (1<<33 - 1) << 30
	r := t
	wall := (*uint64)(unsafe.Pointer(&r))
	sec := int64(*wall&secMask>>nsecShift) + int64(d/time.Second)
	if sec < 0 || sec >= 1<<33 {
		panic(fmt.Sprintf("clocktest: step %v moves %v out of range", d, t))
	}
	*wall = *wall&^secMask | uint64(sec)<<nsecShift
	if r.Sub(t) != 0 || r.Round(0).Sub(t.Round(0)) != d || r.Round(0) == r {
		panic("clocktest: time.Time's layout is not what StepWall expects")
	}
	return r
}
