package publishtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

func (h Harness) testPublishThenSnapshot(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		if _, err := publish.Open(ctx, s, "site"); !errors.Is(err, publish.ErrNothingPublished) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Open before any commit: %v, want ErrNothingPublished", err)
		}
		files := map[string]string{"index.html": "<h1>hi</h1>", "css/a.css": "body{}", "empty": ""}
		c := Publish(t, ctx, s, "site", files)
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

// testRacingPublishers: in every round, N writers begin from the same
// pointer version and commit at once. Exactly one commits, each pointer
// version is consumed by exactly one commit, and losers leave nothing.
func (h Harness) testRacingPublishers(t *testing.T) {
	for _, n := range []int{2, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h.forEach(t, func(t *testing.T, s store.Store) {
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
				for _, k := range Keys(t, ctx, s, "race/gen/") {
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

// testSnapshotIsolation: a reader holding a snapshot keeps reading its own
// generation's bytes while writers commit and GC runs (within the grace).
func (h Harness) testSnapshotIsolation(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		Publish(t, ctx, s, "iso", map[string]string{"a": "gen-0 a", "b": "gen-0 b"})
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

// testEmptyGeneration: a generation of no objects commits like any other
// (its manifest lists none) and replaces a non-empty one whole.
func (h Harness) testEmptyGeneration(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		Publish(t, ctx, s, "e", map[string]string{"f": "x"})
		c, err := Begin(t, ctx, s, "e", nil).Commit(ctx)
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
