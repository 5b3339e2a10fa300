package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/memstore"
)

// backends are the stores every publish test runs on: memory, a
// directory, and latchkey's own server in-process through both of its
// APIs (serverBackends).
func backends() map[string]func(tb testing.TB) store.Store {
	m := map[string]func(tb testing.TB) store.Store{
		"memstore": func(tb testing.TB) store.Store {
			s := memstore.New()
			tb.Cleanup(func() { s.Close() })
			return s
		},
		"filestore": func(tb testing.TB) store.Store {
			s, err := filestore.Open(tb.TempDir(), nil)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		},
	}
	maps.Copy(m, serverBackends())
	return m
}

func forEach(t *testing.T, fn func(t *testing.T, s store.Store)) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

func publishFiles(t *testing.T, ctx context.Context, s store.Store, prefix string, files map[string]string) publish.Commit {
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

// keysUnder lists every key under prefix.
func keysUnder(t *testing.T, ctx context.Context, s store.Store, prefix string) []string {
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

func TestPublishThenSnapshot(t *testing.T) {
	forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		if _, err := publish.Open(ctx, s, "site"); !errors.Is(err, publish.ErrNothingPublished) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Open before any commit: %v, want ErrNothingPublished", err)
		}
		files := map[string]string{"index.html": "<h1>hi</h1>", "css/a.css": "body{}", "empty": ""}
		c := publishFiles(t, ctx, s, "site", files)
		if c.Files != 3 || c.Bytes != int64(len("<h1>hi</h1>")+len("body{}")) {
			t.Fatalf("commit = %+v", c)
		}
		snap, err := publish.Open(ctx, s, "site")
		if err != nil {
			t.Fatal(err)
		}
		if snap.Generation() != c.Generation || snap.Version() != c.Version {
			t.Fatalf("snapshot %s@%s, commit %s@%s", snap.Generation(), snap.Version(), c.Generation, c.Version)
		}
		if got := len(snap.Files()); got != len(files) {
			t.Fatalf("snapshot has %d files, want %d", got, len(files))
		}
		for name, want := range files {
			got, err := snap.ReadFile(ctx, name)
			if err != nil || string(got) != want {
				t.Fatalf("ReadFile(%q) = %q, %v; want %q", name, got, err, want)
			}
		}
		if _, err := snap.Open(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Open(missing) = %v, want ErrNotFound", err)
		}
	})
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

// TestRacingPublishers: in every round, N writers begin from the same
// pointer version and commit at once. Exactly one commits, each pointer
// version is consumed by exactly one commit, and losers leave nothing.
func TestRacingPublishers(t *testing.T) {
	for _, n := range []int{2, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			forEach(t, func(t *testing.T, s store.Store) {
				ctx := context.Background()
				consumed := map[store.Version]string{}
				for round := 0; round < 5; round++ {
					base := ""
					if snap, err := publish.Open(ctx, s, "race"); err == nil {
						base = string(snap.Version())
					}
					writers := make([]*publish.Writer, n)
					for i := range writers {
						w, err := publish.Begin(ctx, s, "race", nil)
						if err != nil {
							t.Fatal(err)
						}
						for f := 0; f < 3; f++ {
							body := fmt.Sprintf("%s/%d", w.ID(), f)
							if err := w.Put(ctx, fmt.Sprintf("f%d", f), strings.NewReader(body)); err != nil {
								t.Fatal(err)
							}
						}
						writers[i] = w
					}
					var wg sync.WaitGroup
					results := make([]error, n)
					commits := make([]publish.Commit, n)
					for i, w := range writers {
						wg.Go(func() { commits[i], results[i] = w.Commit(ctx) })
					}
					wg.Wait()
					winners := 0
					for i, err := range results {
						switch {
						case err == nil:
							winners++
							if prev, dup := consumed[store.Version(base)]; dup {
								t.Fatalf("pointer version %q committed twice: %s and %s", base, prev, commits[i].Generation)
							}
							consumed[store.Version(base)] = commits[i].Generation
						case errors.Is(err, publish.ErrSuperseded):
						default:
							t.Fatalf("round %d writer %d: %v", round, i, err)
						}
					}
					if winners != 1 {
						t.Fatalf("round %d: %d winners, want 1", round, winners)
					}
					snap, err := publish.Open(ctx, s, "race")
					if err != nil {
						t.Fatal(err)
					}
					for f := 0; f < 3; f++ {
						b, err := snap.ReadFile(ctx, fmt.Sprintf("f%d", f))
						if err != nil || string(b) != fmt.Sprintf("%s/%d", snap.Generation(), f) {
							t.Fatalf("snapshot file %d = %q, %v", f, b, err)
						}
					}
				}
				// Only the generations that won a round are left.
				gens := map[string]bool{}
				for _, k := range keysUnder(t, ctx, s, "race/gen/") {
					gens[strings.Split(k, "/")[2]] = true
				}
				if len(gens) != len(consumed) {
					t.Fatalf("%d generations stored, %d committed: losers left objects behind", len(gens), len(consumed))
				}
				for _, g := range consumed {
					if !gens[g] {
						t.Fatalf("committed generation %s missing", g)
					}
				}
			})
		})
	}
}

// TestSnapshotIsolation: a reader holding a snapshot keeps reading its own
// generation's bytes while writers commit and GC runs (within the grace).
func TestSnapshotIsolation(t *testing.T) {
	forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		publishFiles(t, ctx, s, "iso", map[string]string{"a": "gen-0 a", "b": "gen-0 b"})
		snap, err := publish.Open(ctx, s, "iso")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 1; i <= 10; i++ {
				w, err := publish.Begin(ctx, s, "iso", nil)
				if err != nil {
					t.Error(err)
					return
				}
				errA := w.Put(ctx, "a", strings.NewReader(fmt.Sprintf("gen-%d a", i)))
				errB := w.Put(ctx, "b", strings.NewReader(fmt.Sprintf("gen-%d b", i)))
				if err := errors.Join(errA, errB); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
					return
				}
				if _, err := w.Commit(ctx); err != nil {
					t.Error(err)
					return
				}
				if _, err := publish.GC(ctx, s, "iso", &publish.GCOptions{Grace: time.Hour}); err != nil {
					t.Error(err)
					return
				}
			}
			close(done)
		})
		for reading := true; reading; {
			select {
			case <-done:
				reading = false
			default:
			}
			a, errA := snap.ReadFile(ctx, "a")
			b, errB := snap.ReadFile(ctx, "b")
			if errA != nil || errB != nil || string(a) != "gen-0 a" || string(b) != "gen-0 b" {
				t.Fatalf("snapshot read %q, %q (%v, %v): want generation 0", a, b, errA, errB)
			}
		}
		wg.Wait()
		latest, err := publish.Open(ctx, s, "iso")
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := latest.ReadFile(ctx, "a"); string(b) != "gen-10 a" {
			t.Fatalf("latest a = %q", b)
		}
	})
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
	put(t, ctx, zombie, "x", "stale")
	w2 := begin(t, ctx, s, "f", &publish.Options{Token: 8})
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
	publishFiles(t, ctx, s, "c", map[string]string{"f": "original"})
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
	w := begin(t, ctx, s, "ab", nil)
	w.Put(ctx, "big", bytes.NewReader(make([]byte, 1<<16)))
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := keysUnder(t, ctx, s, "ab/"); len(keys) != 0 {
		t.Fatalf("abort left %v", keys)
	}
}

// begin starts a writer or fails the test.
func begin(t testing.TB, ctx context.Context, s store.Store, prefix string, opts *publish.Options) *publish.Writer {
	t.Helper()
	w, err := publish.Begin(ctx, s, prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// put writes body as the object name or fails the test.
func put(t testing.TB, ctx context.Context, w *publish.Writer, name, body string) {
	t.Helper()
	if err := w.Put(ctx, name, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyGeneration: a generation of no objects commits like any other
// (its manifest lists none) and replaces a non-empty one whole.
func TestEmptyGeneration(t *testing.T) {
	forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		publishFiles(t, ctx, s, "e", map[string]string{"f": "x"})
		c, err := begin(t, ctx, s, "e", nil).Commit(ctx)
		if err != nil || c.Files != 0 || c.Bytes != 0 {
			t.Fatalf("empty commit = %+v, %v", c, err)
		}
		snap, err := publish.Open(ctx, s, "e")
		if err != nil || snap.Generation() != c.Generation || len(snap.Files()) != 0 {
			t.Fatalf("snapshot of the empty generation = %v, %v", snap, err)
		}
		if _, err := snap.Open(ctx, "f"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("f in the empty generation: %v, want ErrNotFound", err)
		}
	})
}

// getHook calls before once, before the first Get of a key ending in
// suffix.
type getHook struct {
	store.Store
	suffix string
	before func()
	once   sync.Once
}

func (g *getHook) Get(ctx context.Context, key string) (store.Entry, error) {
	if strings.HasSuffix(key, g.suffix) {
		g.once.Do(g.before)
	}
	return g.Store.Get(ctx, key)
}

// TestOpenAfterManifestCollected: between Open's read of the pointer and
// of the manifest, a newer generation commits and GC (with a grace shorter
// than that gap) removes the older one. Open reads the pointer again and
// returns the newer generation, not an error.
func TestOpenAfterManifestCollected(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	old := publishAt(t, ctx, s, "oc", clk, "old")
	var next string
	hooked := &getHook{Store: s, suffix: "/manifest", before: func() {
		next = publishAt(t, ctx, s, "oc", clk, "new")
		clk.t = clk.t.Add(time.Hour)
		if res, err := publish.GC(ctx, s, "oc", &publish.GCOptions{Grace: time.Minute, Now: clk.now}); err != nil || len(res.Deleted) != 1 || res.Deleted[0] != old {
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
	w := begin(t, ctx, s, "fin", nil)
	put(t, ctx, w, "a", "1")
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, "b", strings.NewReader("2")); !errors.Is(err, publish.ErrFinished) {
		t.Fatalf("Put after Commit = %v, want ErrFinished", err)
	}
	if _, err := w.Commit(ctx); !errors.Is(err, publish.ErrFinished) {
		t.Fatalf("Commit again = %v, want ErrFinished", err)
	}
	a := begin(t, ctx, s, "fin", nil)
	if err := a.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Abort(ctx); !errors.Is(err, publish.ErrFinished) {
		t.Fatalf("Abort again = %v, want ErrFinished", err)
	}
}
