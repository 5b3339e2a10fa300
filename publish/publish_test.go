package publish_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/memstore"
)

// backends are the local stores the suite runs on here; latchkey's own
// server, through both of its APIs, runs it in tests/publishserver.
func backends() map[string]func(tb testing.TB) store.Store {
	return map[string]func(tb testing.TB) store.Store{
		"memstore": func(tb testing.TB) store.Store {
			s := memstore.New()
			tb.Cleanup(func() { s.Close() })
			return s
		},
		"filestore": func(tb testing.TB) store.Store {
			s, err := filestore.Open(tb.TempDir(), nil)
			testutil.Opened(tb, s, err)
			return s
		},
	}
}

// TestSuite runs publishtest on each local backend.
func TestSuite(t *testing.T) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			publishtest.Run(t, publishtest.Harness{New: open})
		})
	}
}

func TestBadNamesRefused(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	w, err := publish.Begin(ctx, s, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a/"} {
		if err := w.Put(ctx, name, strings.NewReader("x")); err == nil {
			t.Errorf("Put(%q) succeeded, want refusal", name)
		}
	}
	if err := w.Put(ctx, "ok", strings.NewReader("1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, "ok", strings.NewReader("2")); err == nil {
		t.Error("second Put of one name succeeded")
	}
}

func TestFencing(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	w, err := publish.Begin(ctx, s, "f", &publish.Options{Token: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := publish.Begin(ctx, s, "f", &publish.Options{Token: 6}); !errors.Is(err, publish.ErrFenced) {
		t.Fatalf("Begin with older token = %v, want ErrFenced", err)
	}
	// A zombie that began before the newer holder committed loses the CAS.
	zombie, err := publish.Begin(ctx, s, "f", &publish.Options{Token: 7})
	if err != nil {
		t.Fatal(err)
	}
	publishtest.Put(t, ctx, zombie, "x", "stale")
	w2 := publishtest.Begin(t, ctx, s, "f", &publish.Options{Token: 8})
	if _, err := w2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := zombie.Commit(ctx); !errors.Is(err, publish.ErrSuperseded) {
		t.Fatalf("zombie commit = %v, want ErrSuperseded", err)
	}
	snap, _ := publish.Open(ctx, s, "f")
	if snap.Token() != 8 {
		t.Fatalf("pointer token %d, want 8", snap.Token())
	}
}

func TestCorruptionDetected(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	publishtest.Publish(t, ctx, s, "c", map[string]string{"f": "original"})
	snap, _ := publish.Open(ctx, s, "c")
	key := "c/gen/" + snap.Generation() + "/data/f"
	if _, err := s.Put(ctx, key, []byte("tampered"), store.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.ReadFile(ctx, "f"); !errors.Is(err, publish.ErrCorrupt) {
		t.Fatalf("read of replaced object = %v, want ErrCorrupt", err)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	w := publishtest.Begin(t, ctx, s, "ab", nil)
	w.Put(ctx, "big", bytes.NewReader(make([]byte, 1<<16)))
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := publishtest.Keys(t, ctx, s, "ab/"); len(keys) != 0 {
		t.Fatalf("abort left %v", keys)
	}
}

// TestOpenAfterManifestCollected: between Open's read of the pointer and
// of the manifest, a newer generation commits and GC (with a grace shorter
// than that gap) removes the older one. Open reads the pointer again and
// returns the newer generation, not an error.
func TestOpenAfterManifestCollected(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := &publishtest.Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	old := publishtest.PublishAt(t, ctx, s, "oc", clk, "old")
	var next string
	hooked := &publishtest.GetHook{Store: s, Suffix: "/manifest", Before: func() {
		next = publishtest.PublishAt(t, ctx, s, "oc", clk, "new")
		clk.T = clk.T.Add(time.Hour)
		if res, err := publish.GC(ctx, s, "oc", &publish.GCOptions{Grace: time.Minute, Now: clk.Now}); err != nil || len(res.Deleted) != 1 || res.Deleted[0] != old {
			t.Errorf("GC = %+v, %v; want %s deleted", res, err, old)
		}
	}}
	snap, err := publish.Open(ctx, hooked, "oc")
	if err != nil || snap.Generation() != next {
		t.Fatalf("Open = %v, %v; want generation %s", snap, err, next)
	}
	if b, err := snap.ReadFile(ctx, "x"); err != nil || string(b) != "new" {
		t.Fatalf("x = %q, %v", b, err)
	}
}

// A Writer that committed or aborted writes nothing more, and says so with
// ErrFinished.
func TestFinishedWriterRefuses(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	w := publishtest.Begin(t, ctx, s, "fin", nil)
	publishtest.Put(t, ctx, w, "a", "1")
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, "b", strings.NewReader("2")); !errors.Is(err, publish.ErrFinished) {
		t.Fatalf("Put after Commit = %v, want ErrFinished", err)
	}
	if _, err := w.Commit(ctx); !errors.Is(err, publish.ErrFinished) {
		t.Fatalf("Commit again = %v, want ErrFinished", err)
	}
	a := publishtest.Begin(t, ctx, s, "fin", nil)
	if err := a.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Abort(ctx); !errors.Is(err, publish.ErrFinished) {
		t.Fatalf("Abort again = %v, want ErrFinished", err)
	}
}
