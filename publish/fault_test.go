package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// TestCommitAmbiguousPointerWrite: the pointer write lands but the writer
// is told the outcome is unknown; Commit reads the pointer back and
// reports success instead of discarding a visible generation.
func TestCommitAmbiguousPointerWrite(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	w, err := publish.Begin(ctx, fs, "amb", nil)
	if err != nil {
		t.Fatal(err)
	}
	publishtest.Put(t, ctx, w, "f", "body")
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: "amb/pointer", Fault: faultstore.ApplyThenFail, Count: 1})
	c, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("Commit after applied-but-unknown pointer write: %v", err)
	}
	snap, err := publish.Open(ctx, fs, "amb")
	if err != nil || snap.Generation() != c.Generation || snap.Version() != c.Version {
		t.Fatalf("snapshot %v, %v; commit %+v", snap, err, c)
	}
	if b, err := snap.ReadFile(ctx, "f"); err != nil || string(b) != "body" {
		t.Fatalf("f = %q, %v", b, err)
	}
}

// pointerFaults begins a publication under prefix on a faultstore over
// memstore, with "f" holding body, and injects fault into the writes of
// its pointer (fault's Ops and Prefix are set here).
func pointerFaults(t *testing.T, prefix, body string, fault faultstore.Rule) (*faultstore.Store, *publish.Writer) {
	t.Helper()
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	w := publishtest.Begin(t, ctx, fs, prefix, nil)
	publishtest.Put(t, ctx, w, "f", body)
	fault.Ops, fault.Prefix = faultstore.OpPut, prefix+"/pointer"
	fs.Inject(fault)
	return fs, w
}

// TestCommitTransientThenRetry: the pointer write fails before it reaches
// the store; Commit retries it and succeeds.
func TestCommitTransientThenRetry(t *testing.T) {
	ctx := context.Background()
	fs, w := pointerFaults(t, "tr", "x", faultstore.Rule{Fault: faultstore.FailBefore, Count: 2})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if fs.Injected() != 2 {
		t.Fatalf("%d faults injected, want 2", fs.Injected())
	}
	// An unknown outcome that did not apply is retried too.
	w2 := publishtest.Begin(t, ctx, fs, "tr", nil)
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: "tr/pointer", Fault: faultstore.FailBefore, Err: store.ErrUnknownOutcome, Count: 1})
	if _, err := w2.Commit(ctx); err != nil {
		t.Fatalf("Commit after unapplied unknown outcome: %v", err)
	}
	snap, _ := publish.Open(ctx, fs, "tr")
	if snap.Generation() != w2.ID() {
		t.Fatalf("current %s, want %s", snap.Generation(), w2.ID())
	}
}

// TestCommitPersistentFailureCleansUp: a pointer write that keeps failing
// is retried with backoff until MaxSwapDelay after the manifest, no later,
// then given up, and leaves nothing behind.
func TestCommitPersistentFailureCleansUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		fs, w := pointerFaults(t, "pf", "x", faultstore.Rule{Fault: faultstore.FailBefore})
		start := time.Now()
		_, err := w.Commit(ctx)
		if !errors.Is(err, store.ErrTransient) {
			t.Fatalf("Commit = %v, want ErrTransient after giving up", err)
		}
		if el := time.Since(start); el > publish.MaxSwapDelay || el < publish.MaxSwapDelay-2*time.Second {
			t.Errorf("gave up after %v, want within a backoff (1s) of MaxSwapDelay (%v)", el, publish.MaxSwapDelay)
		}
		if n := fs.Injected(); n < 60 {
			t.Errorf("%d pointer writes in %v with backoffs under 1s, want at least 60", n, publish.MaxSwapDelay)
		}
		for it, err := range store.All(ctx, fs, "pf/") {
			t.Fatalf("left behind: %v %v", it.Key, err)
		}
	})
}

// TestCommitContextEndedAfterPointerApplied: the pointer write applies but
// the writer's context ends before it hears so (a lease lost at that
// moment). Commit reads the pointer back instead of deleting a generation
// that is already the current one.
func TestCommitContextEndedAfterPointerApplied(t *testing.T) {
	ctx := context.Background()
	fs, w := pointerFaults(t, "ce", "body", faultstore.Rule{Fault: faultstore.ApplyThenFail, Err: context.Canceled, Count: 1})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatalf("Commit whose pointer write applied before the context ended: %v", err)
	}
	snap, err := publish.Open(ctx, fs, "ce")
	if err != nil || snap.Generation() != w.ID() {
		t.Fatalf("current = %v, %v; want %s", snap, err, w.ID())
	}
	if b, err := snap.ReadFile(ctx, "f"); err != nil || string(b) != "body" {
		t.Fatalf("current generation's f = %q, %v: deleted by its own writer", b, err)
	}
}

// TestCommitContextEndedBeforePointerApplied: the context ends and the
// pointer is as the writer began. The write may still be in flight, so the
// generation is left for GC rather than deleted under a pointer that may
// yet name it; nothing is visible.
func TestCommitContextEndedBeforePointerApplied(t *testing.T) {
	ctx := context.Background()
	fs, w := pointerFaults(t, "cb", "body", faultstore.Rule{Fault: faultstore.FailBefore, Err: context.Canceled, Count: 1})
	_, err := w.Commit(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "left for GC") {
		t.Fatalf("Commit = %v, want context.Canceled, generation left for GC", err)
	}
	if _, err := publish.Open(ctx, fs, "cb"); !errors.Is(err, publish.ErrNothingPublished) {
		t.Fatalf("Open = %v, want nothing published", err)
	}
	if n := len(publishtest.Keys(t, ctx, fs, "cb/gen/"+w.ID()+"/")); n != 2 {
		t.Fatalf("%d objects left, want the object and the manifest for GC", n)
	}
}

// lateLanding holds back the first write of one key and reports its
// outcome as unknown; held lands it later: a request that timed out at the
// client and was applied late by the service.
type lateLanding struct {
	store.Store
	key  string
	held func()
	puts int
}

func (l *lateLanding) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if key != l.key {
		return l.Store.Put(ctx, key, value, cond)
	}
	l.puts++
	if l.puts == 1 {
		l.held = func() { l.Store.Put(ctx, key, value, cond) }
		return "", store.NewOpError("test", "put", key, store.ErrUnknownOutcome, nil)
	}
	return l.Store.Put(ctx, key, value, cond)
}

// TestCommitLateLandingThenSuperseded: the first pointer write (a create)
// times out and the pointer reads back absent. That is no proof the write
// did not apply (it may land late, or have landed and been deleted), so
// the writer does not create it again: Commit reports the outcome unknown
// and leaves the generation for GC. Then the first write lands late, a
// reader opens the generation, and another writer commits on top: the
// reader of the briefly visible generation can still read it, since its
// writer deleted nothing.
func TestCommitLateLandingThenSuperseded(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	ll := &lateLanding{Store: inner, key: "ll/pointer"}
	w, err := publish.Begin(ctx, ll, "ll", nil)
	if err != nil {
		t.Fatal(err)
	}
	publishtest.Put(t, ctx, w, "f", "late")
	_, err = w.Commit(ctx)
	if !errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, publish.ErrSuperseded) {
		t.Fatalf("Commit = %v, want an unknown outcome (not superseded: nothing says it lost)", err)
	}
	if ll.puts != 1 {
		t.Fatalf("%d pointer writes, want 1: a create of unknown outcome is not sent again", ll.puts)
	}
	ll.held() // the first write lands late
	reader, err := publish.Open(ctx, inner, "ll")
	if err != nil || reader.Generation() != w.ID() {
		t.Fatalf("the late write did not land: %v, %v", reader, err)
	}
	other := publishtest.Begin(t, ctx, inner, "ll", nil)
	publishtest.Put(t, ctx, other, "f", "other")
	if _, err := other.Commit(ctx); err != nil {
		t.Fatalf("other commit: %v", err)
	}
	if b, err := reader.ReadFile(ctx, "f"); err != nil || string(b) != "late" {
		t.Fatalf("reader of the briefly visible generation: %q, %v; its writer deleted it", b, err)
	}
}

// TestCommitPastMaxAge: a writer that lived longer than its MaxAge may
// have had objects removed by GC as abandoned; Commit refuses it and
// deletes what is left.
func TestCommitPastMaxAge(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := &publishtest.Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w := publishtest.Begin(t, ctx, s, "ma", &publish.Options{Now: clk.Now, MaxAge: 10 * time.Minute})
	publishtest.Put(t, ctx, w, "f", "x")
	clk.T = clk.T.Add(10*time.Minute + time.Second)
	if _, err := w.Commit(ctx); !errors.Is(err, publish.ErrAbandoned) {
		t.Fatalf("Commit past MaxAge = %v, want ErrAbandoned", err)
	}
	if keys := publishtest.Keys(t, ctx, s, "ma/"); len(keys) != 0 {
		t.Fatalf("left %v", keys)
	}
}

// TestTokenNeverGoesBackwards: an unfenced writer (token 0) keeps the
// pointer's token, so a zombie with an old token is still refused.
func TestTokenNeverGoesBackwards(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	w := publishtest.Begin(t, ctx, s, "tk", &publish.Options{Token: 7})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w = publishtest.Begin(t, ctx, s, "tk", nil)
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if snap, _ := publish.Open(ctx, s, "tk"); snap.Token() != 7 {
		t.Fatalf("pointer token after an unfenced commit = %d, want 7", snap.Token())
	}
	if _, err := publish.Begin(ctx, s, "tk", &publish.Options{Token: 6}); !errors.Is(err, publish.ErrFenced) {
		t.Fatalf("Begin with token 6 = %v, want ErrFenced", err)
	}
}
