package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func openT(t testing.TB, dir string) *Engine {
	t.Helper()
	e, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// openNoSync opens a fresh engine in t.TempDir() without fsync, closed at
// cleanup: enginetest.Open for the engine's own tests, which cannot
// import enginetest (it imports engine).
func openNoSync(t testing.TB) *Engine {
	t.Helper()
	e, err := Open(t.TempDir(), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func put(t testing.TB, e *Engine, key, val string) uint64 {
	t.Helper()
	idx, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: key, Data: []byte(val)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestIndexStartsAtOneAndGrows(t *testing.T) {
	e := openT(t, t.TempDir())
	if got := e.Index(); got != 1 {
		t.Fatalf("fresh engine index = %d, want 1", got)
	}
	a := put(t, e, "a", "1")
	b := put(t, e, "b", "2")
	if a != 2 || b != 3 || e.Index() != 3 {
		t.Fatalf("indexes %d %d (engine %d), want 2 3 (3)", a, b, e.Index())
	}
}

func TestPutRecordStampsIndexes(t *testing.T) {
	e := openT(t, t.TempDir())
	first := put(t, e, "k", "v1")
	second := put(t, e, "k", "v2")
	err := e.View(func(tx *Tx) error {
		kv, ok := getRec(tx, "k")
		if !ok {
			return errors.New("k missing")
		}
		if kv.CreateIndex != first || kv.ModifyIndex != second || string(kv.Data) != "v2" {
			return fmt.Errorf("got %+v, want create %d modify %d value v2", kv, first, second)
		}
		if tx.Index() != second {
			return fmt.Errorf("view index %d, want %d", tx.Index(), second)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFailedUpdateWritesNothingAndConsumesNoIndex(t *testing.T) {
	e := openT(t, t.TempDir())
	before := e.Index()
	boom := errors.New("boom")
	_, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: "k", Data: []byte("v")})
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if e.Index() != before {
		t.Fatalf("index moved from %d to %d", before, e.Index())
	}
	e.View(func(tx *Tx) error {
		if _, ok := getRec(tx, "k"); ok {
			t.Error("failed update's write is visible")
		}
		return nil
	})
	if got := put(t, e, "j", "v"); got != before+1 {
		t.Fatalf("next index %d, want %d", got, before+1)
	}
}

func TestReadOnlyUpdateConsumesNoIndex(t *testing.T) {
	e := openT(t, t.TempDir())
	put(t, e, "k", "v")
	before := e.Index()
	idx, err := e.Update(t.Context(), func(tx *Tx) error {
		getRec(tx, "k")
		tx.DeleteRecord("missing")
		return nil
	})
	if err != nil || idx != before || e.Index() != before {
		t.Fatalf("read-only update: idx %d err %v engine %d, want %d", idx, err, e.Index(), before)
	}
}

func TestListAndKeysIndex(t *testing.T) {
	e := openT(t, t.TempDir())
	put(t, e, "a/1", "x")
	i2 := put(t, e, "a/2", "x")
	i3 := put(t, e, "b/1", "x")
	e.View(func(tx *Tx) error {
		kvs := listRecs(tx, "a/", "", 0)
		if len(kvs) != 2 || kvs[0].Key != "a/1" || kvs[1].Key != "a/2" {
			t.Errorf("ListKV(a/) = %v", kvs)
		}
		if kvs := listRecs(tx, "a/", "a/1", 0); len(kvs) != 1 || kvs[0].Key != "a/2" {
			t.Errorf("ListKV(a/, after a/1) = %v", kvs)
		}
		if kvs := listRecs(tx, "", "", 2); len(kvs) != 2 {
			t.Errorf("ListKV limit 2 = %v", kvs)
		}
		if got := tx.KeysIndex("a/"); got != i2 {
			t.Errorf("KeysIndex(a/) = %d, want %d", got, i2)
		}
		if got := tx.KeysIndex(""); got != i3 {
			t.Errorf("KeysIndex() = %d, want %d", got, i3)
		}
		if got := tx.KeysIndex("zzz"); got != 1 {
			t.Errorf("KeysIndex(zzz) = %d, want 1", got)
		}
		return nil
	})
	del, err := e.Update(t.Context(), func(tx *Tx) error {
		if !tx.DeleteRecord("a/1") {
			return errors.New("a/1 not deleted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.View(func(tx *Tx) error {
		if got := tx.KeysIndex("a/"); got != del {
			t.Errorf("after delete KeysIndex(a/) = %d, want tombstone %d", got, del)
		}
		if got := tx.KeysIndex("b/"); got != i3 {
			t.Errorf("KeysIndex(b/) = %d, want %d (a sibling's delete must not move it)", got, i3)
		}
		return nil
	})
}

func TestRestartKeepsDataAndIndex(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := put(t, e, "k", "v")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openT(t, dir)
	if e.Index() != last {
		t.Fatalf("index after restart %d, want %d", e.Index(), last)
	}
	if got := put(t, e, "k2", "v"); got <= last {
		t.Fatalf("index went backwards after restart: %d <= %d", got, last)
	}
	e.View(func(tx *Tx) error {
		if kv, ok := getRec(tx, "k"); !ok || string(kv.Data) != "v" {
			t.Errorf("k after restart = %+v %v", kv, ok)
		}
		return nil
	})
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir)
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestClosedEngine(t *testing.T) {
	e, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := e.Update(t.Context(), func(tx *Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Update after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConcurrentUpdatesGetDistinctIndexes(t *testing.T) {
	e := openT(t, t.TempDir())
	const n = 200
	var wg sync.WaitGroup
	idx := make([]uint64, n)
	for i := range n {
		wg.Go(func() {
			var err error
			idx[i], err = e.Update(t.Context(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: fmt.Sprintf("k%03d", i), Data: []byte("v")})
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, x := range idx {
		if seen[x] {
			t.Fatalf("index %d given twice", x)
		}
		seen[x] = true
	}
	if e.Index() != n+1 {
		t.Fatalf("engine index %d, want %d", e.Index(), n+1)
	}
	st := e.Stats()
	t.Logf("%d updates in %d commits", st.Updates, st.Commits)
}

func TestWaitWakesOnPrefixNotSibling(t *testing.T) {
	e := openT(t, t.TempDir())
	start := e.Index()
	woke := make(chan string, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, p := range []string{"a/", "b/"} {
		go func() {
			if err := e.Wait(ctx, p, start); err == nil {
				woke <- p
			}
		}()
	}
	awaitWaiters(t, e, 2) // both registered
	put(t, e, "a/x", "v")
	if got := <-woke; got != "a/" {
		t.Fatalf("woke %q, want a/", got)
	}
	e.watch.mu.Lock()
	_, bStill := e.watch.byPfx[kvSpace+"b/"]
	e.watch.mu.Unlock()
	if !bStill {
		t.Fatal("the b/ waiter was woken by a write to a/x")
	}
}

func TestWaitSeesCommitBeforeRegistration(t *testing.T) {
	e := openT(t, t.TempDir())
	seen := e.Index()
	put(t, e, "a/x", "v")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.Wait(ctx, "a/", seen); err != nil {
		t.Fatalf("Wait after a matching commit: %v", err)
	}
}

func TestWaitEndsOnClose(t *testing.T) {
	e, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { errc <- e.Wait(t.Context(), "k", e.Index()) }()
	time.Sleep(10 * time.Millisecond)
	e.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
}

// A Wait whose index is older than the engine's memory of recent commits
// returns at once (the caller re-checks) rather than risk missing a change.
func TestWaitOlderThanMemoryReturnsAtOnce(t *testing.T) {
	e := openNoSync(t)
	start := e.Index()
	var wg sync.WaitGroup
	for i := range ringSize + 10 {
		wg.Go(func() {
			e.Update(t.Context(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: fmt.Sprintf("other/%d", i)})
				return nil
			})
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.Wait(ctx, "mine/", start); err != nil {
		t.Fatalf("Wait from before the remembered commits: %v, want an immediate return", err)
	}
	// From the current index nothing under mine/ has happened: it blocks.
	short, cancel2 := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel2()
	if err := e.Wait(short, "mine/", e.Index()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with nothing new: %v, want the deadline", err)
	}
}
