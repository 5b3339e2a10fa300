package consulmodel

import (
	"strconv"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// The store contract holds over the Consul entries (the engine's own
// TestConformance runs it over raw records, durable).
func TestStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(tb testing.TB) store.Store {
		s := Store(enginetest.Open(tb))
		tb.Cleanup(func() { s.Close() })
		return s
	}})
}

// A plain Put through the store is Consul's set: Session kept, LockIndex
// and Flags reset; the version is the decimal ModifyIndex.
func TestStorePutIsConsulSet(t *testing.T) {
	e := enginetest.Open(t)
	if _, err := e.Update(t.Context(), func(tx *engine.Tx) error {
		Put(tx, KV{Key: "k", Value: []byte("a"), Flags: 7, LockIndex: 3, Session: "s1"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v, err := Store(e).Put(t.Context(), "k", []byte("b"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	e.View(func(tx *engine.Tx) error {
		kv, _, err := Get(tx, "k")
		if err != nil || kv.Session != "s1" || kv.LockIndex != 0 || kv.Flags != 0 || string(kv.Value) != "b" {
			t.Errorf("after store Put: %+v %v", kv, err)
		}
		if string(v) != strconv.FormatUint(kv.ModifyIndex, 10) {
			t.Errorf("version %q, ModifyIndex %d", v, kv.ModifyIndex)
		}
		return nil
	})
	if got, err := Store(e).Get(t.Context(), "k"); err != nil || string(got.Value) != "b" {
		t.Errorf("store Get: %+v %v", got, err)
	}
}
