package leasetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

func testCreate(t *testing.T, e *env) {
	start := time.Now()
	l := mustAcquire(t, e.locker(t, nil, e.opts("a")))
	if l.Token() != 1 {
		t.Errorf("token = %d, want 1", l.Token())
	}
	rec, _, err := lease.Inspect(t.Context(), e.s, e.key)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Holder != "a" || rec.Token != 1 || rec.Released || rec.TTL != e.ttl || rec.Nonce == "" {
		t.Errorf("record = %+v, want holder a, token 1, held, ttl %v", rec, e.ttl)
	}
	select {
	case <-l.Done():
		if !e.late(t, start, e.validity(), "Done closed") {
			t.Error("Done closed right after acquiring")
		}
	default:
	}
}

func testHeld(t *testing.T, e *env) {
	mustAcquire(t, e.locker(t, nil, e.opts("a")))
	before := time.Now()
	_, err := e.locker(t, nil, e.opts("b")).TryAcquire(t.Context())
	after := time.Now()
	var held *lease.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("TryAcquire of a held lease: %v, want a *HeldError matching ErrHeld", err)
	}
	if held.Holder != "a" || held.Token != 1 {
		t.Errorf("HeldError = %+v, want holder a, token 1", held)
	}
	// A first look: Until is the instant of that look plus the record's
	// TTL, on our own clock.
	if held.Until.Before(before.Add(e.ttl)) || held.Until.After(after.Add(e.ttl)) {
		t.Errorf("HeldError.Until is %v after the look began (which took %v); want one TTL (%v) after it",
			held.Until.Sub(before), after.Sub(before), e.ttl)
	}
}

func testTakeover(t *testing.T, e *env) {
	a := mustAcquire(t, e.locker(t, nil, e.opts("a")))
	b := e.locker(t, nil, e.opts("b"))
	first := time.Now()
	if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("first look: %v, want ErrHeld", err)
	}
	e.sleep(e.ttl / 2)
	if !e.expectHeld(t, b, first, "after TTL/2 unchanged") {
		return
	}
	if e.synct {
		e.sleep(e.ttl/2 - time.Millisecond)
		if !e.expectHeld(t, b, first, "1ms before a full TTL unchanged") {
			return
		}
		e.sleep(time.Millisecond)
	} else {
		e.sleep(e.ttl / 2)
	}
	l, err := b.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("after a full TTL unchanged: %v, want the lease", err)
	}
	wantSuccessor(t, l, a, "takeover")
	// a wrote before b's first look, which began at first.
	e.checkStopped(t, a, first.Add(e.validity()), "takeover")
	if err := a.Renew(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("old holder's Renew after takeover: %v, want ErrLost", err)
	}
}

// testRenewRestarts: b first looks at a's record; a renews; b, looking
// again more than a TTL after its first look, sees a new version and must
// wait a full TTL from then. The renew comes early in a's validity so a
// loaded machine is unlikely to make it late; if it is late anyway, the
// lease is correctly lost and the subtest stops.
func testRenewRestarts(t *testing.T, e *env) {
	start := time.Now()
	a := mustAcquire(t, e.locker(t, nil, e.opts("a")))
	b := e.locker(t, nil, e.opts("b"))
	if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("first look: %v, want ErrHeld", err)
	}
	e.sleep(e.ttl * 3 / 10)
	if err := a.Renew(t.Context()); err != nil {
		if errors.Is(err, lease.ErrLost) && e.late(t, start, e.validity(), "renew") {
			return
		}
		t.Fatalf("Renew: %v", err)
	}
	e.sleep(e.ttl * 9 / 10) // 1.2 TTL since b's first look, 0.9 since the renew
	seen := time.Now()
	if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("TryAcquire more than a TTL after the first look, after a renew: %v, want ErrHeld", err)
	}
	e.sleep(e.ttl * 6 / 10)
	if !e.expectHeld(t, b, seen, "0.6 TTL after seeing the renewed version") {
		return
	}
	e.sleep(e.ttl * 5 / 10)
	if _, err := b.TryAcquire(t.Context()); err != nil {
		t.Fatalf("TryAcquire a full TTL after seeing the renewed version: %v", err)
	}
}

// testWallClock: the holder writes wall times far in the future or the
// past; a contender still waits exactly one TTL of its own clock.
func testWallClock(t *testing.T, e *env) {
	for _, skew := range []time.Duration{2 * e.ttl, -2 * e.ttl, 100 * e.ttl} {
		ho := e.opts("skewed")
		ho.Now = func() time.Time { return time.Now().Add(skew) }
		a := mustAcquire(t, e.locker(t, nil, ho))
		co := e.opts("contender")
		co.Now = func() time.Time { return time.Now().Add(-skew) }
		b := e.locker(t, nil, co)
		first := time.Now()
		if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("skew %v: first look: %v, want ErrHeld", skew, err)
		}
		e.sleep(e.ttl / 2)
		if !e.expectHeld(t, b, first, fmt.Sprintf("skew %v: after TTL/2", skew)) {
			continue // taken over late, and released: the next skew starts afresh
		}
		e.sleep(e.ttl / 2)
		l := takeOver(t, b, a, fmt.Sprintf("skew %v", skew))
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func testReacquire(t *testing.T, e *env) {
	lk := e.locker(t, nil, e.opts("a"))
	other := e.locker(t, nil, e.opts("b"))
	want := uint64(1)
	for i := range 6 {
		who := lk
		if i%2 == 1 {
			who = other
		}
		l := mustAcquire(t, who)
		if l.Token() != want {
			t.Fatalf("acquisition %d: token %d, want %d", i, l.Token(), want)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if !errors.Is(l.Err(), lease.ErrReleased) {
			t.Errorf("Err after Release = %v, want ErrReleased", l.Err())
		}
		rec, _, err := lease.Inspect(t.Context(), e.s, e.key)
		if err != nil || !rec.Released || rec.Token != want {
			t.Fatalf("record after release = %+v, %v; want released with token %d", rec, err, want)
		}
		want++
	}
}

func testForceRelease(t *testing.T, e *env) {
	a := mustAcquire(t, e.locker(t, nil, e.opts("a")))
	if err := lease.ReleaseHolder(t.Context(), e.s, e.key, "someone-else"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("ReleaseHolder by another name: %v, want ErrHeld", err)
	}
	if err := lease.ForceRelease(t.Context(), e.s, e.key, "operator"); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	b := e.acquireAfterTTL(t, "b", a, "after forced release")
	if b == nil {
		return
	}
	if err := a.Renew(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Renew of the forcibly released lease: %v, want ErrLost", err)
	}
	if err := lease.ReleaseHolder(t.Context(), e.s, e.key, "b"); err != nil {
		t.Fatalf("ReleaseHolder by the holder's name: %v", err)
	}
	if e.acquireAfterTTL(t, "c", b, "after ReleaseHolder") == nil {
		return
	}
	if err := lease.ForceRelease(t.Context(), e.s, "locks/absent", "operator"); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ForceRelease of an absent key: %v", err)
	}
}

// acquireAfterTTL acquires a lease that was released by force: a locker
// of the holder name looks once (ErrHeld), waits a full TTL and takes the
// record over, with the token after prev's. It returns nil when the look
// did not find the lease held (expectHeld).
func (e *env) acquireAfterTTL(t *testing.T, name string, prev *lease.Lease, what string) *lease.Lease {
	t.Helper()
	lk := e.locker(t, nil, e.opts(name))
	first := time.Now()
	if !e.expectHeld(t, lk, first, "right after a forced release") {
		return nil
	}
	e.sleep(e.ttl)
	l := mustAcquire(t, lk)
	wantSuccessor(t, l, prev, what)
	return l
}
