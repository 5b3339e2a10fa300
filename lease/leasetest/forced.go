package leasetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

// testForcedReleaseWaitsATTL: a record released by force (ForceRelease,
// ReleaseHolder: anyone but the holder through its own Lease) is taken
// over only after a contender saw it unchanged for a full TTL, so the old
// holder, which learns of the release only at its next renew, regards
// the lease as lost before anyone else holds it.
func testForcedReleaseWaitsATTL(t *testing.T, e *env) {
	for _, how := range []string{"ForceRelease", "ReleaseHolder"} {
		func() {
			e := newEnv(t, e.h, e.ttl)
			a := mustAcquire(t, e.locker(t, nil, e.opts("a")))
			var err error
			if how == "ForceRelease" {
				err = lease.ForceRelease(t.Context(), e.s, e.key, "operator")
			} else {
				err = lease.ReleaseHolder(t.Context(), e.s, e.key, "a")
			}
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			b := e.locker(t, nil, e.opts("b"))
			first := time.Now()
			if !e.expectHeld(t, b, first, how+": right after the forced release") {
				return
			}
			e.sleep(e.ttl / 2)
			if !e.expectHeld(t, b, first, how+": TTL/2 after the forced release") {
				return
			}
			e.sleep(e.ttl / 2)
			takeOver(t, b, a, how)
			// a's last write (its acquisition) came before the forced
			// release, which came before b's first look.
			e.checkStopped(t, a, first.Add(e.validity()), how)
			if err := a.Renew(t.Context()); !errors.Is(err, lease.ErrLost) {
				t.Errorf("%s: Renew of the forcibly released lease: %v, want ErrLost", how, err)
			}
		}()
	}
}

// testForcedReleaseSeenByHolder: the holder's next renew after a forced
// release fails with ErrLost and closes Done at once.
func testForcedReleaseSeenByHolder(t *testing.T, e *env) {
	a := mustAcquire(t, e.locker(t, nil, e.opts("a")))
	if err := lease.ForceRelease(t.Context(), e.s, e.key, "operator"); err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Renew after a forced release: %v, want ErrLost", err)
	}
	select {
	case <-a.Done():
	default:
		t.Error("Done still open after the renew found the lease forcibly released")
	}
	rec, _, err := lease.Inspect(t.Context(), e.s, e.key)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Forced || rec.Released || rec.Token != a.Token() || rec.Holder != "operator" {
		t.Errorf("record after ForceRelease = %+v, want forced, not released, token %d, by operator", rec, a.Token())
	}
}

// testDeletedRecord: deleting the record by hand (kv delete of a lock
// key) does not restart the tokens: the next acquisition gets a token
// above every earlier one, so a zombie of an earlier holding is fenced
// off, and the new lease says the record had been deleted.
func testDeletedRecord(t *testing.T, e *env) {
	const res = "resources/job"
	var prev uint64
	var zombies []uint64
	for round := range 3 {
		l := mustAcquire(t, e.locker(t, nil, e.opts("a")))
		if l.Token() <= prev {
			t.Fatalf("round %d: token %d after the record was deleted, want more than %d", round, l.Token(), prev)
		}
		if got, want := l.Recreated(), round > 0; got != want {
			t.Errorf("round %d: Recreated = %v, want %v", round, got, want)
		}
		if _, err := lease.FencedPut(t.Context(), e.s, res, []byte("holder"), l.Token()); err != nil {
			t.Fatalf("round %d: FencedPut of the holder: %v", round, err)
		}
		for _, z := range zombies {
			if _, err := lease.FencedPut(t.Context(), e.s, res, []byte("zombie"), z); !errors.Is(err, lease.ErrFenced) {
				t.Errorf("round %d: FencedPut with the earlier token %d: %v, want ErrFenced", round, z, err)
			}
		}
		if v, tok := fenced(t, e.s, res); v != "holder" || tok != l.Token() {
			t.Errorf("round %d: resource = %q with token %d, want the holder's write with %d", round, v, tok, l.Token())
		}
		prev = l.Token()
		zombies = append(zombies, l.Token())
		if err := e.s.Delete(t.Context(), e.key, store.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := lease.Inspect(t.Context(), e.s, e.key); !errors.Is(err, lease.ErrDeleted) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Inspect of a deleted record: %v, want an error matching ErrDeleted and store.ErrNotFound", err)
	}
	if _, _, err := lease.Inspect(t.Context(), e.s, "locks/never"); !errors.Is(err, store.ErrNotFound) || errors.Is(err, lease.ErrDeleted) {
		t.Errorf("Inspect of a key never used: %v, want store.ErrNotFound without ErrDeleted", err)
	}
}

// barrierGets, once armed, holds the answers of the next n Gets of key
// until all n have read: n goroutines sharing a Locker then all read the record
// before any of them acts on it. Before that, its next Put of key lands
// but reports store.ErrUnknownOutcome and the Get after it fails, so the
// acquisition's outcome stays unknown.
type barrierGets struct {
	store.Store
	key     string
	mu      sync.Mutex
	failGet bool
	n       int
	arrived int
	all     chan struct{}
}

func (s *barrierGets) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	ver, err := s.Store.Put(ctx, key, v, cond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && key == s.key && s.all == nil {
		s.failGet = true
		return "", &store.OpError{Op: "put", Key: key, Kind: store.ErrUnknownOutcome, Err: errors.New("injected: applied, reported unknown")}
	}
	return ver, err
}

func (s *barrierGets) Get(ctx context.Context, key string) (store.Entry, error) {
	s.mu.Lock()
	if key == s.key && s.failGet {
		s.failGet = false
		s.mu.Unlock()
		return store.Entry{}, &store.OpError{Op: "get", Key: key, Kind: store.ErrTransient, Err: errors.New("injected")}
	}
	wait := key == s.key && s.all != nil && s.arrived < s.n
	var ent store.Entry
	var err error
	if wait {
		// Read first, then count the arrival: each of the n reads
		// happens before any of them returns.
		ent, err = s.Store.Get(ctx, key)
		s.arrived++
		if s.arrived == s.n {
			close(s.all)
		}
	}
	all := s.all
	s.mu.Unlock()
	if !wait {
		return s.Store.Get(ctx, key)
	}
	select {
	case <-all:
	case <-ctx.Done():
		return store.Entry{}, ctx.Err()
	}
	return ent, err
}

// testSharedLockerAdoptsOnce: an acquiring write of unknown outcome that
// landed is adopted by the next read that finds its nonce. Two goroutines
// sharing the Locker that both read it must not both adopt it: that
// would be two holders with one token.
func testSharedLockerAdoptsOnce(t *testing.T, e *env) {
	old := mustAcquire(t, e.locker(t, nil, e.opts("old")))
	if err := old.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	bg := &barrierGets{Store: e.s, key: e.key}
	lk := e.locker(t, bg, e.opts("a"))
	if _, err := lk.TryAcquire(t.Context()); err == nil {
		t.Fatal("TryAcquire whose read back failed: acquired, want an unresolved outcome")
	}
	if rec, _, err := lease.Inspect(t.Context(), e.s, e.key); err != nil || rec.Holder != "a" || rec.Released {
		t.Fatalf("record after the acquiring write of unknown outcome = %+v, %v; want held by a", rec, err)
	}
	bg.mu.Lock()
	bg.n, bg.all = 2, make(chan struct{})
	bg.mu.Unlock()
	_, errs := tryAcquireAll(t, lk, lk)
	won := 0
	for i := range 2 {
		if errs[i] == nil {
			won++
		} else if !errors.Is(errs[i], lease.ErrHeld) && !errors.Is(errs[i], lease.ErrLostRace) {
			t.Errorf("goroutine %d: %v, want the lease, ErrHeld or ErrLostRace", i, errs[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d goroutines sharing the Locker got the pending acquisition (errors %v), want exactly 1", won, errs)
	}
}
