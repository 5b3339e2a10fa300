package leasetest

import (
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
)

// testStaleConfirmed: a holder that stopped renewing (it crashed) leaves
// a record whose last write is old; TryAcquire says it looks stale, and
// ConfirmStale takes it over once it has been seen unchanged for a full
// TTL on the contender's own clock, not before.
func testStaleConfirmed(t *testing.T, e *env) {
	mustAcquire(t, e.locker(t, nil, e.opts("crashed")))
	b := e.locker(t, nil, e.opts("b"))
	if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("first look: %v, want ErrHeld", err)
	}
	var held *lease.HeldError
	if _, err := b.TryAcquire(t.Context()); !errors.As(err, &held) || held.Stale {
		t.Fatalf("a fresh record: %v, want a *HeldError that does not look stale", err)
	}
	e.sleep(lease.StaleAfter(e.ttl) + e.ttl/10)
	// A new contender, which has not watched the record before.
	c := e.locker(t, nil, e.opts("c"))
	first := time.Now()
	_, err := c.TryAcquire(t.Context())
	if !errors.As(err, &held) || !held.Stale {
		t.Fatalf("a record not written for %v: %v, want a *HeldError that looks stale", lease.StaleAfter(e.ttl)+e.ttl/10, err)
	}
	l, err := c.ConfirmStale(t.Context(), held)
	if err != nil {
		t.Fatalf("ConfirmStale of an abandoned record: %v", err)
	}
	if took := time.Since(first); took < e.ttl {
		t.Errorf("ConfirmStale took the record over %v after the first look, before a full TTL (%v)", took, e.ttl)
	}
	if l.Token() != 2 {
		t.Errorf("token %d, want 2", l.Token())
	}
}

// testStaleButAlive: a holder whose wall clock is far behind looks stale,
// but it renews; ConfirmStale gives up as soon as it sees the renew
// instead of waiting out the TTL.
func testStaleButAlive(t *testing.T, e *env) {
	ho := e.opts("behind")
	ho.Now = func() time.Time { return time.Now().Add(-3 * e.ttl) }
	a := mustAcquire(t, e.locker(t, nil, ho))
	c := e.locker(t, nil, e.opts("c"))
	var held *lease.HeldError
	if _, err := c.TryAcquire(t.Context()); !errors.As(err, &held) || !held.Stale {
		t.Fatalf("a record written 3 TTLs ago by its writer's clock: %v, want a *HeldError that looks stale", err)
	}
	start := time.Now()
	go func() {
		time.Sleep(e.ttl / 4)
		a.Renew(e.ctx)
	}()
	_, err := c.ConfirmStale(t.Context(), held)
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("ConfirmStale while the holder renews: %v, want ErrHeld", err)
	}
	if took := time.Since(start); took >= e.ttl && !e.late(t, start, e.ttl, "ConfirmStale") {
		t.Errorf("ConfirmStale waited %v, a full TTL, though the holder renewed after %v", took, e.ttl/4)
	}
}
