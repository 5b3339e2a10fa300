// Package leasetest is the conformance suite of package lease: it checks,
// against any store.Store backend, that leases never have two holders,
// that fencing tokens only go up, that a holder regards its lease as lost
// before anyone could take it over, and that ambiguous write outcomes are
// resolved correctly.
//
// Every backend that should carry leases runs it from a test of a few
// lines:
//
//	func TestLeases(t *testing.T) {
//		leasetest.Run(t, leasetest.Harness{
//			New: func(tb testing.TB) store.Store { return memstore.New() },
//		})
//	}
//
// Time-dependent subtests run inside a testing/synctest bubble, so TTLs of
// many seconds cost no wall time: New is called inside the bubble, and the
// store it returns must not depend on goroutines or channels made outside
// it. A backend behind a real network (or with a native watch on real I/O)
// cannot run in a bubble; such harnesses set Harness.RealTime, and the
// suite then uses a real TTL of one second. On the real clock a loaded
// machine may pause a holder for longer than its margin, which is exactly
// the case fencing exists for, and may run a test's steps later than it
// meant to. Safety stays strict there: no takeover before the contender
// saw the record unchanged for a full TTL (measured from before its look),
// a holder's decided deadline at least Margin before any takeover, the
// fenced log perfect, tokens never going back. What a delay can break is
// a liveness premise (the holder renewed in time, the contender looked
// again before a TTL passed); a subtest checks the premise against the
// time that really passed, fails if the outcome came too early to be
// explained by it, and otherwise logs it and stops. Holders whose renews
// do not matter to a subtest get a TTL ten times the contenders'.
//
// Ambiguous outcomes are injected with store/faultstore. The contention
// subtest draws its faults and hold times from a seed it prints; rerun it
// with LATCHKEY_LEASETEST_SEED=N.
package leasetest

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

// Harness describes a backend to the suite.
type Harness struct {
	// New returns an empty store. It is called inside a synctest bubble
	// unless RealTime is set. Required.
	New func(tb testing.TB) store.Store

	// RealTime runs the suite on the real clock, with TTLs of a few
	// hundred milliseconds, for backends that cannot run in a bubble.
	RealTime bool

	// Rounds is how many holdings the contention subtest makes in total.
	// Zero means 60 (12 with RealTime).
	Rounds int
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("leasetest: Harness.New is required")
	}
	if h.Rounds == 0 {
		h.Rounds = 60
		if h.RealTime {
			h.Rounds = 12
		}
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"TryAcquire/absent record is created with token 1", testCreate},
		{"TryAcquire/held record returns a HeldError naming the holder", testHeld},
		{"TryAcquire/held record is taken over only after a full TTL unchanged", testTakeover},
		{"TryAcquire/a renew restarts the contender's observation", testRenewRestarts},
		{"TryAcquire/a holder's wall clock is never compared with ours", testWallClock},
		{"TryAcquire/a write between our read and our CAS loses the race", testLostRace},
		{"Renew/writes a fresh nonce by CAS on our own version", testRenewWrites},
		{"Release/re-acquire increases the token", testReacquire},
		{"Release/forced release keeps the token going up", testForceRelease},
		{"Release/a forced release is taken over only after a full TTL unchanged", testForcedReleaseWaitsATTL},
		{"Release/the holder's next renew after a forced release is lost", testForcedReleaseSeenByHolder},
		{"Release/a record deleted by hand does not restart the tokens", testDeletedRecord},
		{"Release/a create that lands after the record was deleted does not send the tokens back", testLateCreateAfterDelete},
		{"Release/two late creates landing crosswise do not send the tokens back", testLateCreatesCrossing},
		{"TryAcquire/racers creating the first record use one epoch", testFirstAcquirersRace},
		{"TryAcquire/goroutines sharing a Locker adopt a pending acquisition once", testSharedLockerAdoptsOnce},
		{"TryAcquire/an abandoned record looks stale and is confirmed for a TTL before takeover", testStaleConfirmed},
		{"TryAcquire/a stale-looking record that is renewed is not taken", testStaleButAlive},
		{"Renew/a holder cut off from the store is lost before anyone can take over", testLostBeforeTakeover},
		{"Fence/a paused holder is taken over and its late writes are refused", testZombie},
		{"Acquire/waits for a release", testAcquireWaits},
		{"Acquire/gives up when ctx ends and says who holds it", testAcquireTimeout},
		{"Acquire/waiters sharing a Locker share one poller", testSharedPoller},
		{"Acquire/waiters of separate Lockers are served in the order they arrived", testQueueOrder},
		{"Acquire/blocks on the backend's native watch instead of polling", testAcquireWatches},
		{"Run/contenders with skewed wall clocks are never two holders", testContention},
		{"Run/fn's context is cancelled when the lease is lost", testRunLost},
		{"Ambiguous/acquire applied but reported unknown is ours", testAmbiguousAcquireApplied},
		{"Ambiguous/acquire not applied is not ours", testAmbiguousAcquireNotApplied},
		{"Ambiguous/acquire that lands after the read-back is adopted or released", testAmbiguousAcquireLandsLate},
		{"Ambiguous/renew applied but reported unknown keeps the lease", testAmbiguousRenew},
		{"Ambiguous/renew retried and reported as a conflict keeps the lease", testAmbiguousRenewConflict},
		{"Ambiguous/release applied but reported unknown is released", testAmbiguousRelease},
		{"Ambiguous/release after our renew landed late still releases", testAmbiguousRenewLandsBeforeRelease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h.RealTime {
				t.Parallel() // the subtests mostly sleep
				tc.fn(t, newEnv(t, h, time.Second))
				return
			}
			synctest.Test(t, func(t *testing.T) {
				tc.fn(t, newEnv(t, h, 10*time.Second))
			})
		})
	}
}

// env is one subtest's store and time scale.
type env struct {
	h     Harness
	s     store.Store
	ttl   time.Duration
	key   string
	ctx   context.Context
	synct bool
}

func newEnv(t *testing.T, h Harness, ttl time.Duration) *env {
	s := h.New(t)
	t.Cleanup(func() { s.Close() })
	return &env{h: h, s: s, ttl: ttl, key: "locks/job", ctx: t.Context(), synct: !h.RealTime}
}

// opts returns options for a contender named holder.
func (e *env) opts(holder string) *lease.Options {
	return &lease.Options{Holder: holder, TTL: e.ttl, Margin: e.ttl / 5}
}

// locker returns a Locker on s (e.s when nil).
func (e *env) locker(t *testing.T, s store.Store, o *lease.Options) *lease.Locker {
	t.Helper()
	if s == nil {
		s = e.s
	}
	lk, err := lease.NewLocker(s, e.key, o)
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	return lk
}

// validity is how long a holding lasts without a renew: TTL − Margin.
func (e *env) validity() time.Duration { return e.ttl - e.ttl/5 }

// late reports, on the real clock only, whether d or more has passed
// since start. The real-time subtests use it where a liveness premise
// (the holder renewed before its validity ran out, the contender looked
// again before a full TTL) may have been broken by a loaded machine
// scheduling the test late: a lease lost, or taken over, after that much
// time is correct behaviour, so the subtest logs it and stops checking
// what depended on the premise. Before that much time the same outcome is
// a bug and the caller fails. On fake time it is always false: every
// timing there is exact.
func (e *env) late(t *testing.T, start time.Time, d time.Duration, what string) bool {
	t.Helper()
	if e.synct {
		return false
	}
	took := time.Since(start)
	if took < d {
		return false
	}
	t.Logf("%s: %v passed where the test assumed less than %v (a loaded machine scheduled us late); not checking what depended on it",
		what, took.Round(time.Millisecond), d)
	return true
}

// expectHeld requires lk.TryAcquire to report ErrHeld. lk first saw the
// record's current version during a call that began at observed, so it
// must not take the lease over before a full TTL has passed since then.
// On the real clock a takeover after a full TTL is correct (the test was
// scheduled late): expectHeld then logs it, releases the lease and
// returns false so the caller stops.
func (e *env) expectHeld(t *testing.T, lk *lease.Locker, observed time.Time, what string) bool {
	t.Helper()
	l, err := lk.TryAcquire(t.Context())
	switch {
	case errors.Is(err, lease.ErrHeld):
		return true
	case err == nil && e.late(t, observed, e.ttl, what):
		l.Release(t.Context())
		return false
	case err == nil:
		t.Fatalf("%s: took the lease over (token %d) %v after first seeing the record's version; want ErrHeld before a full TTL (%v)",
			what, l.Token(), time.Since(observed), e.ttl)
	default:
		t.Fatalf("%s: TryAcquire = %v, want ErrHeld", what, err)
	}
	return false
}

// checkStopped checks that a holder whose lease was taken over regarded
// it as lost in time: its validity ended no later than notAfter (the
// latest instant the renew rule allows, at least Margin before the
// takeover) and Done is closed. On fake time Done must be closed already.
// On the real clock the timer that closes Done may run late on a loaded
// machine, which is the pause fencing exists for; the deadline the holder
// decided on is still checked strictly, and Done must close soon after.
func (e *env) checkStopped(t *testing.T, l *lease.Lease, notAfter time.Time, what string) {
	t.Helper()
	if d := l.ValidUntil().Sub(notAfter); d > 0 {
		t.Errorf("%s: the holder's validity ends %v after the latest instant its renew rule allows", what, d)
	}
	if e.synct {
		select {
		case <-l.Done():
		default:
			t.Errorf("%s: the old holder's Done is still open after a takeover", what)
		}
		return
	}
	t0 := time.Now()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("%s: the old holder's Done is still open 10s after a takeover", what)
		return
	}
	if d := time.Since(t0); d > 50*time.Millisecond {
		t.Logf("%s: the old holder's Done closed %v after the takeover was seen (its timer ran late)", what, d.Round(time.Millisecond))
	}
}

// sleep waits d: on the bubble's fake clock, or really.
func (e *env) sleep(d time.Duration) {
	time.Sleep(d)
	if e.synct {
		synctest.Wait()
	}
}

func mustAcquire(t *testing.T, lk *lease.Locker) *lease.Lease {
	t.Helper()
	l, err := lk.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return l
}

// wantSuccessor checks the fencing token of next, the lease taken after
// prev: one more than prev's.
func wantSuccessor(t *testing.T, next, prev *lease.Lease, what string) {
	t.Helper()
	if next.Token() != prev.Token()+1 {
		t.Errorf("%s: token %d, want %d", what, next.Token(), prev.Token()+1)
	}
}

// takeOver is lk's TryAcquire a full TTL after prev's last write, which
// must get the lease, with the token after prev's.
func takeOver(t *testing.T, lk *lease.Locker, prev *lease.Lease, what string) *lease.Lease {
	t.Helper()
	l, err := lk.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("%s: a full TTL later: %v, want the lease", what, err)
	}
	wantSuccessor(t, l, prev, what)
	return l
}

func fenced(t *testing.T, s store.Store, key string) (string, uint64) {
	t.Helper()
	v, tok, _, err := lease.FencedGet(t.Context(), s, key)
	if err != nil {
		t.Fatalf("FencedGet: %v", err)
	}
	return string(v), tok
}

// WithoutWatch hides s's store.Watcher, so that Acquire polls. A harness
// running in a synctest bubble wraps a backend whose native watch blocks a
// goroutine on real I/O (inotify, a network read), since such a goroutine
// keeps the bubble's fake clock from advancing.
func WithoutWatch(s store.Store) store.Store {
	return without{s, func(c *store.Capabilities) { c.Watch = false }}
}

// without is a store with only store.Store's methods (its embedding hides
// every optional interface), whose Capabilities clear what off clears.
type without struct {
	store.Store
	off func(*store.Capabilities)
}

func (w without) Capabilities() store.Capabilities {
	c := w.Store.Capabilities()
	w.off(&c)
	return c
}
