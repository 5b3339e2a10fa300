package clocktest

import (
	"testing"
	"time"
)

// A stepped reading keeps its monotonic part: durations measured between
// readings ignore the step, wall-clock arithmetic sees all of it.
func TestStepMovesTheWallClockOnly(t *testing.T) {
	var c Clock
	before := c.Now()
	c.Step(-time.Hour)
	c.Advance(time.Minute)
	after := c.Now()
	if d := after.Sub(before); d < time.Minute || d > time.Minute+time.Second {
		t.Errorf("monotonic duration across a step back of 1h and 1m elapsed = %v, want about 1m", d)
	}
	if d := after.Round(0).Sub(before.Round(0)); d > -58*time.Minute || d < -time.Hour {
		t.Errorf("wall-clock duration = %v, want about -59m", d)
	}
	c.Step(2 * time.Hour)
	if d := time.Unix(0, c.Now().UnixNano()).Sub(before); d < time.Hour+time.Minute {
		t.Errorf("a reading through UnixNano after a step forward of 1h = %v after the first, want over 1h1m", d)
	}
	if d := c.Now().Sub(before); d > time.Minute+time.Second {
		t.Errorf("monotonic duration after a step forward = %v, want about 1m", d)
	}
}
