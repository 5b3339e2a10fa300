package lease_test

import (
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// A TTL with a fraction of a millisecond is kept exactly: a contender
// waits the holder's whole TTL, not the TTL cut down to whole ms.
func TestRecordKeepsSubMillisecondTTL(t *testing.T) {
	for _, ttl := range []time.Duration{20*time.Millisecond + 900*time.Microsecond, 10*time.Millisecond + 1, 15*time.Millisecond + 500*time.Microsecond} {
		synctest.Test(t, func(t *testing.T) {
			s := memstore.New()
			a, err := lease.NewLocker(s, "k", &lease.Options{Holder: "a", TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.TryAcquire(t.Context()); err != nil {
				t.Fatal(err)
			}
			rec, _, err := lease.Inspect(t.Context(), s, "k")
			if err != nil || rec.TTL != ttl {
				t.Fatalf("record TTL = %v (%v), want %v", rec.TTL, err, ttl)
			}
			b, err := lease.NewLocker(s, "k", &lease.Options{Holder: "b", TTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("first look: %v", err)
			}
			time.Sleep(ttl - 1)
			if l, err := b.TryAcquire(t.Context()); !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("TTL %v: 1ns before a full TTL unchanged: %v (lease %v), want ErrHeld", ttl, err, l != nil)
			}
			time.Sleep(1)
			if _, err := b.TryAcquire(t.Context()); err != nil {
				t.Fatalf("TTL %v: after a full TTL unchanged: %v", ttl, err)
			}
		})
	}
}

// Records written before the TTL was kept in nanoseconds (ttl_ms only)
// stay readable, and records written now keep a ttl_ms, rounded up, for
// older readers.
func TestRecordTTLCompatibility(t *testing.T) {
	s := memstore.New()
	old := `{"holder":"x","nonce":"n1","token":3,"released":false,"acquired":"2026-01-01T00:00:00Z","renewed":"2026-01-01T00:00:00Z","ttl_ms":15000}`
	if _, err := s.Put(t.Context(), "k", []byte(old), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	rec, _, err := lease.Inspect(t.Context(), s, "k")
	if err != nil || rec.TTL != 15*time.Second || rec.Token != 3 {
		t.Fatalf("old record = %+v, %v; want TTL 15s, token 3", rec, err)
	}
	rec.TTL = 20*time.Millisecond + 100*time.Microsecond
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		MS int64 `json:"ttl_ms"`
		NS int64 `json:"ttl_ns"`
	}
	if err := json.Unmarshal(b, &w); err != nil || w.MS != 21 || w.NS != int64(rec.TTL) {
		t.Errorf("encoded %s: ttl_ms %d, ttl_ns %d; want 21 (rounded up) and %d", b, w.MS, w.NS, int64(rec.TTL))
	}
}
