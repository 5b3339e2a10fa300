package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store/memstore"
)

// steppedClock is a wall clock that an operator (or NTP) steps: it reads
// the real (here: fake) time plus an offset that the test changes.
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *steppedClock) step(d time.Duration) { c.offset.Add(int64(d)) }

// TestWallClockSteps: the wall clocks of a holder and a contender are
// stepped forwards and backwards by an hour while they work (Options.Now
// is the only wall clock the package reads). Nothing waits longer or
// expires sooner than configured: the holder keeps a lease it renews, a
// holder that stops renewing regards it as lost exactly TTL−Margin after
// its last write was sent, and a queued contender takes it over exactly a
// TTL after first seeing that write, not before and not later than a
// poll interval after; ConfirmStale too.
func TestWallClockSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		s := memstore.New()
		var hc, cc steppedClock
		ho := &lease.Options{Holder: "holder", TTL: ttl, Now: hc.now}
		co := &lease.Options{Holder: "contender", TTL: ttl, Now: cc.now}
		steps := []time.Duration{time.Hour, -2 * time.Hour, time.Hour, -time.Hour, 2 * time.Hour}
		stepAll := func(i int) {
			hc.step(steps[i%len(steps)])
			cc.step(-steps[i%len(steps)])
		}

		// A holder that renews keeps its lease through the steps.
		h, err := lease.NewLocker(s, "locks/stepped", ho)
		if err != nil {
			t.Fatal(err)
		}
		l, err := h.Hold(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 9 {
			time.Sleep(ttl / 3)
			stepAll(i)
			if l.Err() != nil {
				t.Fatalf("a renewed lease was lost after %v of clock steps: %v", time.Duration(i+1)*ttl/3, l.Err())
			}
			if left := time.Until(l.ValidUntil()); left > ttl-ho.TTL/5 || left <= 0 {
				t.Fatalf("validity left %v, want in (0, TTL−Margin]", left)
			}
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}

		// A holder that stops renewing: its lease ends exactly at
		// TTL−Margin after its write was sent, whatever its clock says.
		dead, err := lease.NewLocker(s, "locks/stepped", ho)
		if err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		d, err := dead.TryAcquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		c, err := lease.NewLocker(s, "locks/stepped", co)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			l, err := c.Acquire(t.Context())
			if err != nil {
				t.Error(err)
				return
			}
			got <- time.Now()
			l.Release(context.Background())
		}()
		synctest.Wait()
		firstLook := time.Now()
		for i := range 4 {
			time.Sleep(ttl / 6)
			stepAll(i)
			synctest.Wait()
		}
		time.Sleep(sent.Add(ttl-ttl/5).Sub(time.Now()) - time.Nanosecond)
		if d.Err() != nil {
			t.Errorf("the holder regarded its lease as lost (%v) before TTL−Margin after its last write", d.Err())
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !errors.Is(d.Err(), lease.ErrLost) {
			t.Errorf("at TTL−Margin after its last write the holder's lease is %v, want lost", d.Err())
		}
		stepAll(3)
		var at time.Time
		select {
		case at = <-got:
		case <-time.After(2 * ttl):
			t.Fatal("the contender did not take over within two TTLs")
		}
		synctest.Wait() // and released it
		if took := at.Sub(firstLook); took < ttl || took > ttl+c.Options().PollInterval+ttl/10 {
			t.Errorf("the contender took over %v after its first look, want a TTL (%v) and at most a poll interval more", took, ttl)
		}

		// ConfirmStale: the contender's clock stepped an hour ahead makes
		// the record look stale; it is still taken only after a TTL.
		c2, err := lease.NewLocker(s, "locks/stepped", co)
		if err != nil {
			t.Fatal(err)
		}
		// Leave a record nobody renews: the contender released it; take
		// it and drop it.
		if _, err := dead.TryAcquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		cc.step(time.Hour)
		_, err = c2.TryAcquire(t.Context())
		var held *lease.HeldError
		if !errors.As(err, &held) || !held.Stale {
			t.Fatalf("with the contender's clock an hour ahead: %v, want a stale-looking HeldError", err)
		}
		look := time.Now()
		cc.step(-2 * time.Hour)
		l2, err := c2.ConfirmStale(t.Context(), held)
		if err != nil {
			t.Fatalf("ConfirmStale: %v", err)
		}
		if took := time.Since(look); took < ttl || took > ttl+c.Options().PollInterval {
			t.Errorf("ConfirmStale took over %v after the first look, want a TTL (%v) and at most a poll interval more", took, ttl)
		}
		l2.Release(t.Context())
	})
}
