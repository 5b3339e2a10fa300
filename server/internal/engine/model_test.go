package engine

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var modelSeed = flag.Uint64("engine.seed", 0, "seed of TestModel (0: random)")

// modelKV is the reference: records and tombstones, by key.
type modelKV struct {
	kv    map[string]Record
	tomb  map[string]uint64
	born  map[string]int64 // tombstone times
	floor uint64           // greatest reaped tombstone index
	index uint64           // last committed
	kvIdx uint64           // last index that changed a record
}

func (m *modelKV) keysIndex(prefix string) uint64 {
	if prefix == "" {
		return max(m.kvIdx, 1)
	}
	var top uint64
	for k, kv := range m.kv {
		if strings.HasPrefix(k, prefix) {
			top = max(top, kv.ModifyIndex)
		}
	}
	for k, i := range m.tomb {
		if strings.HasPrefix(k, prefix) {
			top = max(top, i)
		}
	}
	return max(top, m.floor, 1)
}

// TestModel runs random Updates (puts, deletes, failing writes, no-ops)
// and reads against the engine and a reference model, restarting the
// engine now and then. Rerun a failure with -engine.seed=N.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -engine.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	keys := []string{"a", "a/b", "a/c", "ab", "b", "b/a/x", "c"}
	prefixes := []string{"", "a", "a/", "b", "b/a", "z"}
	dir := t.TempDir()
	opts := &Options{NoSync: true, TombstoneTTL: time.Hour}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	open := func() *Engine {
		e, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		e.now = func() time.Time { return time.Unix(0, clock.Load()) }
		return e
	}
	e := open()
	defer func() { e.Close() }()
	m := &modelKV{kv: map[string]Record{}, tomb: map[string]uint64{}, born: map[string]int64{}, index: 1}
	boom := errors.New("boom")
	for step := range 2000 {
		k := keys[rng.IntN(len(keys))]
		switch op := rng.IntN(10); {
		case op < 4: // put
			v := fmt.Sprintf("v%d", step)
			idx, err := e.Update(t.Context(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: k, Data: []byte(v), Flags: uint64(step)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			m.index++
			create := m.index
			if old, ok := m.kv[k]; ok {
				create = old.CreateIndex
			}
			m.kv[k] = Record{Key: k, Data: []byte(v), Flags: uint64(step), CreateIndex: create, ModifyIndex: m.index}
			delete(m.tomb, k)
			delete(m.born, k)
			m.kvIdx = m.index
			if idx != m.index {
				t.Fatalf("step %d: put index %d, model %d", step, idx, m.index)
			}
		case op < 6: // delete
			idx, err := e.Update(t.Context(), func(tx *Tx) error { tx.DeleteRecord(k); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m.kv[k]; ok {
				m.index++
				delete(m.kv, k)
				m.tomb[k] = m.index
				m.born[k] = clock.Load()
				m.kvIdx = m.index
			}
			if idx != m.index {
				t.Fatalf("step %d: delete index %d, model %d", step, idx, m.index)
			}
		case op < 7: // a write that fails: nothing changes
			_, err := e.Update(t.Context(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: k, Data: []byte("never")})
				tx.DeleteRecord(keys[0])
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("step %d: failing update: %v", step, err)
			}
		case op < 8: // restart
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = open()
		case op < 9: // time passes; expired tombstones are reaped
			clock.Add(int64(time.Duration(rng.IntN(40)) * time.Minute))
			if _, err := e.reap(nil); err != nil {
				t.Fatal(err)
			}
			for k, born := range m.born {
				if born < clock.Load()-int64(time.Hour) {
					m.floor = max(m.floor, m.tomb[k])
					delete(m.tomb, k)
					delete(m.born, k)
				}
			}
		}
		p := prefixes[rng.IntN(len(prefixes))]
		e.View(func(tx *Tx) error {
			if tx.Index() != m.index || e.Index() != m.index {
				t.Fatalf("step %d: index %d/%d, model %d", step, tx.Index(), e.Index(), m.index)
			}
			got, ok := getRec(tx, k)
			want, wok := m.kv[k]
			if ok != wok || ok && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d: GetKV(%q) = %+v %v, model %+v %v", step, k, got, ok, want, wok)
			}
			if got, want := tx.KeysIndex(p), m.keysIndex(p); got != want {
				t.Fatalf("step %d: KeysIndex(%q) = %d, model %d", step, p, got, want)
			}
			var wantKeys []string
			for k := range m.kv {
				if strings.HasPrefix(k, p) {
					wantKeys = append(wantKeys, k)
				}
			}
			slices.Sort(wantKeys)
			var gotKeys []string
			for _, kv := range listRecs(tx, p, "", 0) {
				gotKeys = append(gotKeys, kv.Key)
			}
			if !slices.Equal(gotKeys, wantKeys) {
				t.Fatalf("step %d: ListKV(%q) = %v, model %v", step, p, gotKeys, wantKeys)
			}
			return nil
		})
	}
}
