package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

// interleave runs before once, just before the next Put goes to the
// store: another writer slips in between a contender's read and its
// write.
type interleave struct {
	store.Store
	before func()
}

func (s *interleave) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.Store.Put(ctx, key, v, cond)
}

// testLostRace: a contender's acquiring write is a CAS on the version it
// read. When another writer changes the record between that read and the
// write, the contender reports ErrLostRace and the other write stands: on
// a released record (another contender acquires first) and on an expired
// one (the holder renews just before the takeover).
func testLostRace(t *testing.T, e *env) {
	for _, prior := range []string{"released", "expired"} {
		func() {
			e := newEnv(t, e.h, e.ttl)
			a := mustAcquire(t, e.locker(t, nil, e.opts("a")))
			is := &interleave{Store: e.s}
			b := e.locker(t, is, e.opts("b"))
			var other *lease.Lease
			switch prior {
			case "released":
				if err := a.Release(t.Context()); err != nil {
					t.Fatal(err)
				}
				is.before = func() { other = mustAcquire(t, e.locker(t, nil, e.opts("c"))) }
			case "expired":
				if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
					t.Fatalf("first look: %v, want ErrHeld", err)
				}
				e.sleep(e.ttl)
				// a renews late, past its own validity: a holder whose
				// lease has ended cannot renew, so the record is written
				// as a's Renew would, by a CAS from a's version.
				is.before = func() {
					rec, v, err := lease.Inspect(t.Context(), e.s, e.key)
					if err != nil {
						t.Errorf("Inspect: %v", err)
						return
					}
					rec.Nonce = "renewed-late"
					b, _ := rec.MarshalJSON()
					if _, err := e.s.Put(t.Context(), e.key, b, store.IfMatch(v)); err != nil {
						t.Errorf("a's renew: %v", err)
					}
				}
			}
			_, err := b.TryAcquire(t.Context())
			if !errors.Is(err, lease.ErrLostRace) {
				t.Fatalf("%s: TryAcquire whose write met a record changed since its read: %v, want ErrLostRace", prior, err)
			}
			rec, _, err := lease.Inspect(t.Context(), e.s, e.key)
			if err != nil {
				t.Fatal(err)
			}
			switch prior {
			case "released":
				if rec.Holder != "c" || rec.Token != 2 || other == nil || other.Token() != 2 {
					t.Errorf("released: record %+v; want c's acquisition with token 2 to stand", rec)
				}
			case "expired":
				if rec.Holder != "a" || rec.Nonce != "renewed-late" || rec.Token != 1 {
					t.Errorf("expired: record %+v; want a's renew with token 1 to stand", rec)
				}
				// The renew restarted b's observation: a full TTL again.
				if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
					t.Errorf("expired: TryAcquire right after the renew it lost to: %v, want ErrHeld", err)
				}
			}
		}()
	}
}

// testRenewWrites: Renew writes the same holding (holder, token) with a
// fresh nonce, by a CAS on our own version; a record changed by anyone
// else makes it report ErrLost.
func testRenewWrites(t *testing.T, e *env) {
	start := e.locker(t, nil, e.opts("a"))
	l := mustAcquire(t, start)
	before, v1, err := lease.Inspect(t.Context(), e.s, e.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(t.Context()); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	after, v2, err := lease.Inspect(t.Context(), e.s, e.key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Nonce == before.Nonce || v2 == v1 || after.Token != before.Token || after.Holder != "a" || after.Released {
		t.Errorf("after Renew: %+v at %q; before: %+v at %q; want a new nonce and version, same holder and token", after, v2, before, v1)
	}
	// Someone rewrites the record with our own nonce and token (same
	// bytes, new version): only the version tells, and it is ours no more.
	// Where versions are digests of the bytes (no UniqueVersions) the same
	// bytes are no change at all, so the rewrite moves Renewed instead.
	if !e.s.Capabilities().UniqueVersions {
		after.Renewed = after.Renewed.Add(time.Millisecond)
	}
	b, _ := after.MarshalJSON()
	if _, err := e.s.Put(t.Context(), e.key, b, store.IfMatch(v2)); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Renew after the record changed under us: %v, want ErrLost", err)
	}
}
