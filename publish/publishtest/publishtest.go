// Package publishtest is the suite of package publish that runs on any
// store.Store: publication and snapshots, racing publishers, snapshot
// isolation, GC against a model and racing commits and readers. The
// publish package runs it on memstore and filestore; tests/publishserver
// runs it on latchkey's own server through both of its APIs, so that
// importing publish does not bring in the server.
//
//	func TestPublish(t *testing.T) {
//		publishtest.Run(t, publishtest.Harness{
//			New: func(tb testing.TB) store.Store { return memstore.New() },
//		})
//	}
//
// TestGCModel draws its steps from a seed it prints; rerun it with
// -publish.seed=N.
package publishtest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

// Harness describes a backend to the suite.
type Harness struct {
	// New returns an empty store, closed by a tb.Cleanup. Required.
	New func(tb testing.TB) store.Store
}

// Run runs the suite, each subtest in parallel on its own store.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("publishtest: Harness.New is required")
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"PublishThenSnapshot", h.testPublishThenSnapshot},
		{"RacingPublishers", h.testRacingPublishers},
		{"SnapshotIsolation", h.testSnapshotIsolation},
		{"EmptyGeneration", h.testEmptyGeneration},
		{"AbandonedGeneration", h.testAbandonedGeneration},
		{"GCKeepsRecentlySuperseded", h.testGCKeepsRecentlySuperseded},
		{"GCModel", h.testGCModel},
		{"GCRacingCommit", h.testGCRacingCommit},
		{"GCGraceCountsFromSupersession", h.testGCGraceCountsFromSupersession},
		{"CommitRefusesLateSwap", h.testCommitRefusesLateSwap},
		{"CommitAfterGCRemovedObjects", h.testCommitAfterGCRemovedObjects},
		{"ReadersRacingShortGraceGC", h.testReadersRacingShortGraceGC},
	} {
		t.Run(tc.name, tc.fn)
	}
}

// forEach runs fn, in parallel with the other subtests, on a new store.
func (h Harness) forEach(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Parallel()
	fn(t, h.New(t))
}

// Publish commits one generation of files (name to body) under prefix, or
// fails the test.
func Publish(t *testing.T, ctx context.Context, s store.Store, prefix string, files map[string]string) publish.Commit {
	t.Helper()
	w, err := publish.Begin(ctx, s, prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := w.Put(ctx, name, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Keys lists every key under prefix.
func Keys(t *testing.T, ctx context.Context, s store.Store, prefix string) []string {
	t.Helper()
	var keys []string
	for it, err := range store.All(ctx, s, prefix) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, it.Key)
	}
	return keys
}

// Begin starts a writer or fails the test.
func Begin(t testing.TB, ctx context.Context, s store.Store, prefix string, opts *publish.Options) *publish.Writer {
	t.Helper()
	w, err := publish.Begin(ctx, s, prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Put writes body as the object name or fails the test.
func Put(t testing.TB, ctx context.Context, w *publish.Writer, name, body string) {
	t.Helper()
	if err := w.Put(ctx, name, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
}

// Clock is a settable wall clock, for Options.Now and GCOptions.Now.
type Clock struct{ T time.Time }

// Now returns T.
func (c *Clock) Now() time.Time { return c.T }

// GetHook is a store that calls Before once, before the first Get of a
// key ending in Suffix.
type GetHook struct {
	store.Store
	Suffix string
	Before func()
	once   sync.Once
}

// Get calls Before the first time key ends in Suffix, then the store's Get.
func (g *GetHook) Get(ctx context.Context, key string) (store.Entry, error) {
	if strings.HasSuffix(key, g.Suffix) {
		g.once.Do(g.Before)
	}
	return g.Store.Get(ctx, key)
}
