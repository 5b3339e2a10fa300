// Package backoff is the one place latchkey computes retry delays and
// sleeps them: exponential ceilings under a cap, drawn with full or equal
// jitter, and a sleep that ends early when its context does.
//
// A Policy holds no state; the caller counts its attempts (each retry loop
// in the module bounds its attempts differently — cas counts conflicts
// and retries transient failures until a deadline, resolve stops at its
// Attempts, a lease at its deadline) and asks for the delay before
// attempt n:
//
//	p := backoff.Policy{Base: 2 * time.Millisecond, Max: 250 * time.Millisecond}
//	for n := 1; ; n++ {
//		if err := try(); err == nil || n == maxAttempts {
//			return err
//		}
//		if err := backoff.Sleep(ctx, p.Delay(n)); err != nil {
//			return err
//		}
//	}
//
// Everything here is safe for concurrent use; the draws come from
// math/rand/v2's global source.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is exponential backoff: the ceiling before retry n (n ≥ 1) is
// Base·2^(n-1), capped at Max. A Base of zero or less gives a zero ceiling,
// as does n < 1.
type Policy struct {
	Base time.Duration // ceiling before the first retry
	Max  time.Duration // cap on every ceiling
}

// Ceiling returns the ceiling before retry n: Base·2^(n-1), at most Max.
// It does not overflow however large n is.
func (p Policy) Ceiling(n int) time.Duration {
	if n < 1 || p.Base <= 0 {
		return 0
	}
	c := p.Base
	for i := 1; i < n && c < p.Max; i++ {
		if c > p.Max/2 {
			c = p.Max
			break
		}
		c *= 2
	}
	return min(c, p.Max)
}

// Delay draws the sleep before retry n with full jitter: uniform in
// [0, Ceiling(n)), and 0 when the ceiling is 0.
func (p Policy) Delay(n int) time.Duration {
	c := p.Ceiling(n)
	if c <= 0 {
		return 0
	}
	return rand.N(c)
}

// EqualDelay draws the sleep before retry n with equal jitter: uniform in
// [c/2, c] for c = Ceiling(n). It never waits less than half the ceiling,
// for loops that must slow down whatever the draw.
func (p Policy) EqualDelay(n int) time.Duration {
	c := p.Ceiling(n)
	return c/2 + rand.N(c/2+1)
}

// Jitter spreads a fixed period d over [d/2, 3d/2), so that many pollers
// with the same period do not stay in step. It returns d itself when d ≤ 0.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d/2 + rand.N(d)
}

// Between draws a duration uniform in [lo, hi], for a wait that must fall
// in a window (a heartbeat a little early, a read at a fraction of a
// span). It returns lo when hi ≤ lo.
func Between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo+1)
}

// Sleep waits d, or until ctx is done, and then returns ctx.Err(). It
// returns nil at once for d ≤ 0 (unless ctx is already done: then its
// error).
func Sleep(ctx context.Context, d time.Duration) error {
	return Wait(ctx, d, nil)
}

// Wait is Sleep that also ends, with nil, when wake is closed or receives.
// A nil wake never fires.
func Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
