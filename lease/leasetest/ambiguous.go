package leasetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
)

func testAmbiguousAcquireApplied(t *testing.T, e *env) {
	for _, prior := range []string{"absent", "released", "expired"} {
		func() {
			e := newEnv(t, e.h, e.ttl)
			var want uint64 = 1
			switch prior {
			case "released":
				l := mustAcquire(t, e.locker(t, nil, e.opts("old")))
				l.Release(t.Context())
				want = 2
			case "expired":
				mustAcquire(t, e.locker(t, nil, e.opts("old")))
				want = 2
			}
			fs := faultstore.New(e.s, 1)
			lk := e.locker(t, fs, e.opts("a"))
			if prior == "expired" {
				lk.TryAcquire(t.Context())
				e.sleep(e.ttl)
			}
			fs.Inject(faultstore.Rule{Ops: faultstore.OpPut | faultstore.OpTxn, Prefix: e.key, Fault: faultstore.ApplyThenFail, Count: 1})
			start := time.Now()
			l, err := lk.TryAcquire(t.Context())
			if err != nil {
				t.Fatalf("%s: TryAcquire whose write applied but was reported unknown: %v", prior, err)
			}
			if fs.Injected() != 1 {
				t.Fatalf("%d faults fired, want 1", fs.Injected())
			}
			if l.Token() != want {
				t.Errorf("%s: token = %d, want %d", prior, l.Token(), want)
			}
			if err := l.Renew(t.Context()); err != nil {
				if errors.Is(err, lease.ErrLost) && e.late(t, start, e.validity(), prior+": renew") {
					return
				}
				t.Errorf("Renew of the resolved lease: %v", err)
			}
			if _, err := e.locker(t, nil, e.opts("b")).TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
				t.Errorf("%s: another contender: %v, want ErrHeld", prior, err)
			}
		}()
	}
}

func testAmbiguousAcquireNotApplied(t *testing.T, e *env) {
	fs := faultstore.New(e.s, 1)
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut | faultstore.OpTxn, Prefix: e.key, Fault: faultstore.FailBefore, Err: store.ErrUnknownOutcome, Count: 1})
	lk := e.locker(t, fs, e.opts("a"))
	if _, err := lk.TryAcquire(t.Context()); !errors.Is(err, lease.ErrLostRace) {
		t.Fatalf("TryAcquire whose write did not apply: %v, want ErrLostRace", err)
	}
	if _, _, err := lease.Inspect(t.Context(), e.s, e.key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record after a write that did not apply: %v, want none", err)
	}
	// The attempt whose write may still land used no epoch: with
	// transactions its late landing fails on the counter the retry
	// advanced; without, it could only create a record pending a token
	// (see testLateCreateAfterDelete). The retry gets the first token.
	l, err := lk.TryAcquire(t.Context())
	if err != nil || l.Token() != 1 {
		t.Fatalf("retry: %v, want token 1", err)
	}
}

func testAmbiguousRenew(t *testing.T, e *env) {
	for _, fault := range []faultstore.Fault{faultstore.ApplyThenFail, faultstore.FailBefore} {
		func() {
			e := newEnv(t, e.h, e.ttl)
			fs := faultstore.New(e.s, 1)
			start := time.Now()
			l := mustAcquire(t, e.locker(t, fs, e.opts("a")))
			e.sleep(e.ttl / 10) // so that a renew moves the deadline
			before := l.ValidUntil()
			fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: fault, Err: store.ErrUnknownOutcome, Count: 1})
			renewStart := time.Now()
			err := l.Renew(t.Context())
			if e.late(t, start, e.validity(), fault.String()+": renew") {
				return // the lease may be lost before the renew was sent
			}
			switch fault {
			case faultstore.ApplyThenFail:
				if err != nil {
					t.Fatalf("Renew applied but reported unknown: %v, want success", err)
				}
				if !l.ValidUntil().After(before) {
					t.Error("the resolved renew did not extend the lease")
				}
				start = renewStart // the validity now counts from this renew
			default:
				if err == nil || errors.Is(err, lease.ErrLost) {
					t.Fatalf("Renew that did not apply: %v, want a retryable error", err)
				}
				if l.Err() != nil {
					t.Fatalf("lease ended by a renew that did not apply: %v", l.Err())
				}
			}
			if err := l.Renew(t.Context()); err != nil {
				if errors.Is(err, lease.ErrLost) && e.late(t, start, e.validity(), fault.String()+": the next renew") {
					return
				}
				t.Errorf("the next Renew: %v", err)
			}
			if err := l.Release(t.Context()); err != nil {
				t.Errorf("%v: Release: %v", fault, err)
			}
		}()
	}
}

// testAmbiguousRenewConflict: a backend that retried our renew after a
// lost response sees its own first write and reports a conflict.
func testAmbiguousRenewConflict(t *testing.T, e *env) {
	fs := faultstore.New(e.s, 1)
	start := time.Now()
	l := mustAcquire(t, e.locker(t, fs, e.opts("a")))
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.ApplyThenFail, Err: store.ErrConflict, Count: 1})
	renewStart := time.Now()
	if err := l.Renew(t.Context()); err != nil {
		if errors.Is(err, lease.ErrLost) && e.late(t, start, e.validity(), "renew") {
			return
		}
		t.Fatalf("Renew reported as a conflict after it applied: %v, want success", err)
	}
	start = renewStart // the validity now counts from that renew
	if err := l.Renew(t.Context()); err != nil {
		if errors.Is(err, lease.ErrLost) && e.late(t, start, e.validity(), "the next renew") {
			return
		}
		t.Errorf("the next Renew: %v", err)
	}
	// A real conflict is a loss.
	if err := lease.ForceRelease(t.Context(), e.s, e.key, "operator"); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Renew after a forced release: %v, want ErrLost", err)
	}
}

func testAmbiguousRelease(t *testing.T, e *env) {
	fs := faultstore.New(e.s, 1)
	l := mustAcquire(t, e.locker(t, fs, e.opts("a")))
	fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release applied but reported unknown: %v", err)
	}
	rec, _, err := lease.Inspect(t.Context(), e.s, e.key)
	if err != nil || !rec.Released {
		t.Fatalf("record = %+v, %v; want released", rec, err)
	}
	b := mustAcquire(t, e.locker(t, nil, e.opts("b")))
	if b.Token() != 2 {
		t.Errorf("token after release = %d, want 2", b.Token())
	}
}

// delayed holds back the next Put of a lease record (not of the epoch
// counters under lease.EpochKey): it reports ErrUnknownOutcome at once
// and applies the write only when land is called, like a request that
// timed out on the client but reached the server later.
type delayed struct {
	store.Store
	armed bool
	held  func() error
}

func (d *delayed) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	if !d.armed || strings.HasPrefix(key, lease.EpochKey("")) {
		return d.Store.Put(ctx, key, v, cond)
	}
	d.armed = false
	d.held = func() error { _, err := d.Store.Put(context.Background(), key, v, cond); return err }
	return "", store.NewOpError("delayed", "put", key, store.ErrUnknownOutcome, nil)
}

func (d *delayed) land(t *testing.T) {
	t.Helper()
	if err := d.held(); err != nil {
		t.Fatalf("the delayed write did not apply: %v", err)
	}
}

// testAmbiguousAcquireLandsLate: an acquiring write reported unknown and
// not visible on read-back lands later. The Locker recognizes its nonce on
// its next read: it adopts the lease while it is still valid, and releases
// it (so the next acquisition gets a higher token) once it is not.
func testAmbiguousAcquireLandsLate(t *testing.T, e *env) {
	for _, late := range []bool{false, true} {
		func() {
			e := newEnv(t, e.h, e.ttl)
			d := &delayed{Store: e.s, armed: true}
			lk := e.locker(t, d, e.opts("a"))
			start := time.Now()
			if _, err := lk.TryAcquire(t.Context()); !errors.Is(err, lease.ErrLostRace) {
				t.Fatalf("TryAcquire with a write in flight: %v, want ErrLostRace", err)
			}
			if late {
				e.sleep(e.ttl)
			}
			d.land(t)
			if _, err := e.locker(t, nil, e.opts("b")).TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("another contender after the write landed: %v, want ErrHeld", err)
			}
			l, err := lk.TryAcquire(t.Context())
			if !late {
				if errors.Is(err, lease.ErrLostRace) && e.late(t, start, e.validity(), "adopting the landed write") {
					return // expired before we read it: released, which is right
				}
				if err != nil || l.Token() != 1 {
					t.Fatalf("TryAcquire after our write landed: %v, want the lease with token 1", err)
				}
				return
			}
			if !errors.Is(err, lease.ErrLostRace) {
				t.Fatalf("TryAcquire after our write landed too late to use: %v, want ErrLostRace", err)
			}
			rec, _, err := lease.Inspect(t.Context(), e.s, e.key)
			if err != nil || !rec.Released {
				t.Fatalf("record = %+v, %v; want the stale acquisition released", rec, err)
			}
			// A record created pending a token (a store without
			// transactions) handed none out: its taker starts the first
			// epoch.
			want := rec.Token + 1
			if rec.Pending {
				want = 1
			}
			if l, err := lk.TryAcquire(t.Context()); err != nil || l.Token() != want {
				t.Fatalf("next TryAcquire: %v, want token %d", err, want)
			}
		}()
	}
}

// testAmbiguousRenewLandsBeforeRelease: a renew reported unknown lands
// after its read-back; the release that follows meets a version it did not
// expect, recognizes our own renew there, and still releases.
func testAmbiguousRenewLandsBeforeRelease(t *testing.T, e *env) {
	d := &delayed{Store: e.s}
	l := mustAcquire(t, e.locker(t, d, e.opts("a")))
	d.armed = true
	if err := l.Renew(t.Context()); err == nil || errors.Is(err, lease.ErrLost) {
		t.Fatalf("Renew with its write in flight: %v, want a retryable error", err)
	}
	d.land(t)
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release after our renew landed late: %v", err)
	}
	if rec, _, err := lease.Inspect(t.Context(), e.s, e.key); err != nil || !rec.Released || rec.Token != 1 {
		t.Fatalf("record = %+v, %v; want released with token 1", rec, err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("a second Release: %v", err)
	}
}
