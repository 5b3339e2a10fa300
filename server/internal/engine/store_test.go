package engine

import (
	"strconv"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// harness opens a fresh durable engine (fsync on) per store.
func harness() storetest.Harness {
	return storetest.Harness{
		New: func(tb testing.TB) store.Store {
			e, err := Open(tb.TempDir(), nil)
			if err != nil {
				tb.Fatal(err)
			}
			s := e.Store()
			tb.Cleanup(func() {
				s.Close()
				e.Close()
			})
			return s
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, harness()) }

func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness()) }

// A plain Put through the store is Consul's set: Session kept, LockIndex
// and Flags reset; the version is the decimal ModifyIndex.
func TestStorePutIsConsulSet(t *testing.T) {
	e := openT(t, t.TempDir())
	if _, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutKV(KV{Key: "k", Value: []byte("a"), Flags: 7, LockIndex: 3, Session: "s1"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v, err := e.Store().Put(t.Context(), "k", []byte("b"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	e.View(func(tx *Tx) error {
		kv, _ := tx.GetKV("k")
		if kv.Session != "s1" || kv.LockIndex != 0 || kv.Flags != 0 || string(kv.Value) != "b" {
			t.Errorf("after store Put: %+v", kv)
		}
		if string(v) != strconv.FormatUint(kv.ModifyIndex, 10) {
			t.Errorf("version %q, ModifyIndex %d", v, kv.ModifyIndex)
		}
		return nil
	})
}
