package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldEngine opens an engine whose first commit blocks in OnCommit until
// release is called, so that the Updates sent meanwhile queue up and form
// the next batch. first() starts that first commit and waits for it to be
// held; queued(n) waits until n requests are queued behind it.
type heldEngine struct {
	*Engine
	hold  chan struct{}
	armed atomic.Bool // set by startFirst: commits before it are not held
	first atomic.Bool
}

func openHeld(t *testing.T) *heldEngine {
	t.Helper()
	return openHeldIn(t, t.TempDir(), Options{NoSync: true})
}

// openHeldIn is openHeld on dir with opts (OnCommit is replaced).
func openHeldIn(t *testing.T, dir string, opts Options) *heldEngine {
	t.Helper()
	h := &heldEngine{hold: make(chan struct{})}
	opts.OnCommit = func(int, time.Duration) {
		if h.armed.Load() && h.first.CompareAndSwap(false, true) {
			<-h.hold
		}
	}
	e, err := Open(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h.Engine = e
	return h
}

func (h *heldEngine) startFirst(t *testing.T, wg *sync.WaitGroup) {
	h.armed.Store(true)
	wg.Go(func() {
		if _, err := h.Update(context.Background(), func(tx *Tx) error {
			tx.PutRecord(Record{Key: "first"})
			return nil
		}); err != nil {
			t.Error(err)
		}
	})
	for !h.first.Load() {
		time.Sleep(time.Millisecond)
	}
}

func (h *heldEngine) release(n int) {
	for len(h.reqs) < n {
		time.Sleep(time.Millisecond)
	}
	close(h.hold)
}

// A panic in one Update's fn fails that Update only: the others of its
// batch commit, the writer goroutine survives, and the engine keeps
// serving.
func TestPanickingUpdateFailsAloneAndWriterSurvives(t *testing.T) {
	e := openHeld(t)
	var wg sync.WaitGroup
	e.startFirst(t, &wg)
	results := make([]error, 5)
	for i := range 5 {
		wg.Go(func() {
			_, results[i] = e.Update(context.Background(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: fmt.Sprintf("k%d", i), Data: []byte("v")})
				if i == 2 {
					var m map[string]int
					m["boom"]++ // nil map write: a real runtime panic
				}
				return nil
			})
		})
	}
	e.release(5)
	wg.Wait()
	for i, err := range results {
		if i == 2 {
			if err == nil || !strings.Contains(err.Error(), "panicked") {
				t.Errorf("panicking update returned %v, want a 'panicked' error", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("update %d failed beside a panicking one: %v", i, err)
		}
	}
	e.View(func(tx *Tx) error {
		for i := range 5 {
			if _, ok := getRec(tx, fmt.Sprintf("k%d", i)); ok != (i != 2) {
				t.Errorf("k%d present=%v", i, ok)
			}
		}
		return nil
	})
	// The writer is alive: a lone panic fails alone, then writes go on.
	if _, err := e.Update(t.Context(), func(tx *Tx) error { panic("alone") }); err == nil {
		t.Fatal("lone panicking update succeeded")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	idx, err := e.Update(ctx, func(tx *Tx) error { tx.PutRecord(Record{Key: "after"}); return nil })
	if err != nil {
		t.Fatalf("update after panics: %v", err)
	}
	if want := uint64(1 + 1 + 4 + 1); idx != want {
		t.Fatalf("index %d after first, 4 batch members and one more, want %d", idx, want)
	}
}

// A lone Update that fails after writing has nothing to re-run: its fn
// runs exactly once.
func TestLoneFailingUpdateRunsOnce(t *testing.T) {
	e := openNoSync(t)
	var calls atomic.Int32
	_, err := e.Update(t.Context(), func(tx *Tx) error {
		calls.Add(1)
		tx.PutRecord(Record{Key: "k"})
		return errors.New("no")
	})
	if err == nil || calls.Load() != 1 {
		t.Fatalf("err %v after %d calls, want an error after 1", err, calls.Load())
	}
}

// When bbolt cannot commit (here: the file may not grow, as on a full
// disk), every Update of that commit fails with ErrFailed, and the engine
// refuses all later Updates and Views rather than hand out the failed
// commit's indexes again or write over pages bbolt may still reference.
// Reopened, the directory holds exactly the acknowledged writes and the
// index goes on from the last acknowledged one.
func TestFailedCommitStopsEngine(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, &Options{NoSync: true, maxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	acked := put(t, e, "small", "v")
	waited := make(chan error, 1)
	go func() { waited <- e.Wait(t.Context(), "quiet/", acked) }()
	awaitWaiters(t, e, 1)
	idx, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: "big", Data: make([]byte, 2<<20)})
		return nil
	})
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("oversized commit: index %d, err %v, want ErrFailed", idx, err)
	}
	if !errors.Is(e.Err(), ErrFailed) {
		t.Fatalf("Err() = %v after a failed commit", e.Err())
	}
	select {
	case err := <-waited:
		if !errors.Is(err, ErrFailed) {
			t.Fatalf("a blocked Wait ended with %v at the failure, want ErrFailed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a blocked Wait still waits after the engine failed")
	}
	if err := e.Wait(t.Context(), "quiet/", acked); !errors.Is(err, ErrFailed) {
		t.Fatalf("Wait after the failure: %v, want ErrFailed", err)
	}
	if e.Index() != acked {
		t.Fatalf("Index() = %d after a failed commit, want the last acknowledged %d", e.Index(), acked)
	}
	if _, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: "tiny"})
		return nil
	}); !errors.Is(err, ErrFailed) {
		t.Fatalf("update after a failed commit: %v, want ErrFailed", err)
	}
	if err := e.View(func(*Tx) error { return nil }); !errors.Is(err, ErrFailed) {
		t.Fatalf("view after a failed commit: %v, want ErrFailed", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("close after a failed commit: %v", err)
	}

	e = openT(t, dir)
	e.View(func(tx *Tx) error {
		if _, ok := getRec(tx, "small"); !ok {
			t.Error("acknowledged write lost")
		}
		for _, k := range []string{"big", "tiny"} {
			if _, ok := getRec(tx, k); ok {
				t.Errorf("failed write %q present after reopen", k)
			}
		}
		return nil
	})
	if got := put(t, e, "next", "v"); got != acked+1 {
		t.Fatalf("first index after reopen %d, want %d", got, acked+1)
	}
}

// bbolt shows a commit to new readers once its meta page is written, before
// that page's fsync returns. A View must not: while a commit is written but
// not yet known durable, a View waits, and then sees the commit.
func TestViewWaitsForTheFsyncOfAVisibleCommit(t *testing.T) {
	e := openNoSync(t)
	written, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) }) // before Close, also on failure
	e.afterWrite = func() { close(written); <-release }
	go e.Update(context.Background(), func(tx *Tx) error { tx.PutRecord(Record{Key: "k", Data: []byte("v")}); return nil })
	<-written // bbolt has committed; the engine has not published it as durable
	saw := viewSees(e, "k")
	select {
	case ok := <-saw:
		t.Fatalf("a View ran (saw the write: %v) while its commit was not yet durable", ok)
	case <-time.After(50 * time.Millisecond):
	}
	releaseOnce.Do(func() { close(release) })
	if !<-saw {
		t.Fatal("the View after the fsync does not see the write")
	}
}

// An Update whose context ends while the request queue is full (commits
// stalled on a slow disk) returns the context's error instead of blocking
// until there is room.
func TestUpdateGivesUpOnFullQueue(t *testing.T) {
	e := openHeld(t)
	var wg sync.WaitGroup
	e.startFirst(t, &wg)
	defer func() { close(e.hold); wg.Wait() }()
	for range cap(e.reqs) {
		wg.Go(func() { e.Update(context.Background(), func(tx *Tx) error { return nil }) })
	}
	for len(e.reqs) < cap(e.reqs) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.Update(ctx, func(tx *Tx) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Update on a full queue: %v, want the deadline", err)
	}
}
