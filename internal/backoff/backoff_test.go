package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

const ms = time.Millisecond

func TestCeiling(t *testing.T) {
	cases := []struct {
		p    Policy
		n    int
		want time.Duration
	}{
		{Policy{2 * ms, 50 * ms}, 1, 2 * ms},
		{Policy{2 * ms, 50 * ms}, 2, 4 * ms},
		{Policy{2 * ms, 50 * ms}, 3, 8 * ms},
		{Policy{2 * ms, 50 * ms}, 5, 32 * ms},
		{Policy{2 * ms, 50 * ms}, 6, 50 * ms}, // capped
		{Policy{2 * ms, 50 * ms}, 8, 50 * ms},
		{Policy{2 * ms, 50 * ms}, 1 << 30, 50 * ms},
		{Policy{2 * ms, 50 * ms}, 0, 0},                            // no retry before the first attempt
		{Policy{time.Second, 2 * time.Second}, 2, 2 * time.Second}, // exactly the cap
		{Policy{time.Second, ms}, 1, ms},                           // Base above Max: Max
		{Policy{0, time.Second}, 3, 0},
		{Policy{time.Hour, math.MaxInt64}, 64, math.MaxInt64}, // no overflow
		{Policy{100 * ms, 2 * time.Second}, 63, 2 * time.Second},
	}
	for _, c := range cases {
		if got := c.p.Ceiling(c.n); got != c.want {
			t.Errorf("%+v.Ceiling(%d) = %v, want %v", c.p, c.n, got, c.want)
		}
	}
}

// draws checks that f's draws lie in [lo, hi] and spread over most of it.
func draws(t *testing.T, name string, f func() time.Duration, lo, hi time.Duration) {
	t.Helper()
	const n = 2000
	var sum time.Duration
	minD, maxD := hi, lo
	for range n {
		d := f()
		if d < lo || d > hi {
			t.Fatalf("%s = %v, outside [%v, %v]", name, d, lo, hi)
		}
		sum += d
		minD, maxD = min(minD, d), max(maxD, d)
	}
	span := hi - lo
	mean := sum / n
	if mean < lo+span*4/10 || mean > lo+span*6/10 || minD > lo+span/10 || maxD < lo+span*9/10 {
		t.Errorf("%s: mean %v, range [%v, %v]; want uniform on [%v, %v]", name, mean, minD, maxD, lo, hi)
	}
}

func TestDelayIsFullJitter(t *testing.T) {
	p := Policy{ms, 8 * ms}
	for n := 1; n <= 6; n++ {
		c := p.Ceiling(n)
		draws(t, "Delay", func() time.Duration { return p.Delay(n) }, 0, c-1)
	}
	if d := (Policy{0, ms}).Delay(1); d != 0 {
		t.Errorf("Delay with a zero ceiling = %v, want 0", d)
	}
}

func TestEqualDelayKeepsHalfTheCeiling(t *testing.T) {
	p := Policy{50 * ms, time.Second}
	for n := 1; n <= 7; n++ {
		c := p.Ceiling(n)
		draws(t, "EqualDelay", func() time.Duration { return p.EqualDelay(n) }, c/2, c)
	}
}

func TestJitter(t *testing.T) {
	draws(t, "Jitter", func() time.Duration { return Jitter(100 * ms) }, 50*ms, 150*ms-1)
	for _, d := range []time.Duration{0, -ms} {
		if got := Jitter(d); got != d {
			t.Errorf("Jitter(%v) = %v, want it unchanged", d, got)
		}
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), 30*ms); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 30*ms {
			t.Fatalf("Sleep(30ms) slept %v", d)
		}
		if err := Sleep(t.Context(), 0); err != nil || time.Since(start) != 30*ms {
			t.Fatalf("Sleep(0) = %v after %v, want nil at once", err, time.Since(start)-30*ms)
		}
	})
}

func TestSleepEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*ms)
		defer cancel()
		start := time.Now()
		err := Sleep(ctx, time.Hour)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep = %v, want the context's error", err)
		}
		if d := time.Since(start); d != 10*ms {
			t.Fatalf("Sleep returned after %v, want at the 10ms deadline", d)
		}
		if err := Sleep(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep(0) on a done context = %v, want its error", err)
		}
	})
}

func TestWaitWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{})
		time.AfterFunc(5*ms, func() { close(wake) })
		start := time.Now()
		if err := Wait(t.Context(), time.Hour, wake); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 5*ms {
			t.Fatalf("Wait returned after %v, want at the 5ms wake", d)
		}
	})
}

func TestBetween(t *testing.T) {
	lo, hi := 60*time.Millisecond, 70*time.Millisecond
	seenLo, seenHi := false, false
	for range 10000 {
		d := Between(lo, hi)
		if d < lo || d > hi {
			t.Fatalf("Between(%v, %v) = %v", lo, hi, d)
		}
		seenLo = seenLo || d < lo+time.Millisecond
		seenHi = seenHi || d > hi-time.Millisecond
	}
	if !seenLo || !seenHi {
		t.Errorf("10000 draws did not reach both ends of the window (low %v, high %v)", seenLo, seenHi)
	}
	if d := Between(hi, lo); d != hi {
		t.Errorf("Between(hi, lo) = %v, want hi", d)
	}
}
