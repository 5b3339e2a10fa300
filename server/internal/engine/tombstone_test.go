package engine

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestTombstonesAreReapedWithoutIndexGoingBack(t *testing.T) {
	e, err := Open(t.TempDir(), &Options{TombstoneTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	e.now = func() time.Time { return time.Unix(0, clock.Load()) }

	put(t, e, "a/1", "x")
	put(t, e, "b/1", "x")
	del := func(k string) uint64 {
		idx, err := e.Update(t.Context(), func(tx *Tx) error { tx.DeleteRecord(k); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	oldDel := del("a/1")
	clock.Add(int64(50 * time.Minute))
	newDel := del("b/1")
	clock.Add(int64(20 * time.Minute)) // a/1's tombstone is 70 min old, b/1's 20

	if _, err := e.reap(nil); err != nil {
		t.Fatal(err)
	}
	e.View(func(tx *Tx) error {
		tomb := tx.btx.Bucket(bucketTomb)
		if tomb.Get([]byte("a/1")) != nil {
			t.Error("expired tombstone a/1 kept")
		}
		if tomb.Get([]byte("b/1")) == nil {
			t.Error("fresh tombstone b/1 reaped")
		}
		if got := tx.KeysIndex("a/"); got != oldDel {
			t.Errorf("KeysIndex(a/) after reap = %d, want %d (never backwards)", got, oldDel)
		}
		if got := tx.KeysIndex("b/"); got != newDel {
			t.Errorf("KeysIndex(b/) = %d, want %d", got, newDel)
		}
		if got := tx.KeysIndex("zzz"); got != oldDel {
			t.Errorf("KeysIndex(zzz) = %d, want the floor %d", got, oldDel)
		}
		return nil
	})
}
