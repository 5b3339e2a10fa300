package engine

import (
	"errors"
	"sync"
	"testing"
)

// TestModifyIndexIsAtLeastTheAcknowledged: ModifyIndex reads a snapshot
// at least as new as every Update acknowledged before it is called, the
// property a refusal decided on it rests on (consulapi answers a stale cas
// from it). Writers on one key check, right after each acknowledgement,
// that ModifyIndex is at least their own index; a deleted key does not
// exist; a closed engine says so.
func TestModifyIndexIsAtLeastTheAcknowledged(t *testing.T) {
	e := openT(t, t.TempDir())
	if _, ok, err := e.ModifyIndex("k"); ok || err != nil {
		t.Fatalf("missing key: exists=%v err=%v", ok, err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				val := []byte{byte('a' + w), byte('a' + i%26)}
				idx, err := e.Update(t.Context(), func(tx *Tx) error { tx.PutRecord(Record{Key: "k", Data: val}); return nil })
				if err != nil {
					t.Error(err)
					return
				}
				got, ok, err := e.ModifyIndex("k")
				if err != nil || !ok || got < idx {
					t.Errorf("ModifyIndex after the write acknowledged at %d: %d exists=%v err=%v", idx, got, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	idx := put(t, e, "k", "last")
	if got, ok, err := e.ModifyIndex("k"); got != idx || !ok || err != nil {
		t.Fatalf("ModifyIndex = %d %v %v, want %d", got, ok, err, idx)
	}
	if _, err := e.Update(t.Context(), func(tx *Tx) error { tx.DeleteRecord("k"); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.ModifyIndex("k"); ok || err != nil {
		t.Fatalf("deleted key: exists=%v err=%v", ok, err)
	}
	e.Close()
	if _, _, err := e.ModifyIndex("k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed engine: %v, want ErrClosed", err)
	}
}
