package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/publish"
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
	w.Put(ctx, "f", strings.NewReader("body"))
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

// TestCommitTransientThenRetry: the pointer write fails before it reaches
// the store; Commit retries it and succeeds.
func TestCommitTransientThenRetry(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	w, _ := publish.Begin(ctx, fs, "tr", nil)
	w.Put(ctx, "f", strings.NewReader("x"))
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: "tr/pointer", Fault: faultstore.FailBefore, Count: 2})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if fs.Injected() != 2 {
		t.Fatalf("%d faults injected, want 2", fs.Injected())
	}
	// An unknown outcome that did not apply is retried too.
	w2, _ := publish.Begin(ctx, fs, "tr", nil)
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
// gives up after a bounded number of attempts and leaves nothing behind.
func TestCommitPersistentFailureCleansUp(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	w, _ := publish.Begin(ctx, fs, "pf", &publish.Options{MaxTransient: 3})
	w.Put(ctx, "f", strings.NewReader("x"))
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: "pf/pointer", Fault: faultstore.FailBefore})
	_, err := w.Commit(ctx)
	if !errors.Is(err, store.ErrTransient) {
		t.Fatalf("Commit = %v, want ErrTransient after giving up", err)
	}
	if fs.Injected() != 3 {
		t.Fatalf("%d attempts, want 3", fs.Injected())
	}
	for it, err := range store.All(ctx, fs, "pf/") {
		t.Fatalf("left behind: %v %v", it.Key, err)
	}
}
