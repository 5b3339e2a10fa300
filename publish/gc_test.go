package publish_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

var gcSeed = flag.Uint64("publish.seed", 0, "seed of TestGCModel (0: random)")

// clock is a settable wall clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestAbandonedGeneration: a writer that dies before committing leaves a
// generation that readers never see and GC removes after the grace.
func TestAbandonedGeneration(t *testing.T) {
	forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		opts := &publish.Options{Now: clk.now}
		w, _ := publish.Begin(ctx, s, "ab", opts)
		w.Put(ctx, "f", strings.NewReader("committed"))
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		dead, _ := publish.Begin(ctx, s, "ab", opts)
		dead.Put(ctx, "f", strings.NewReader("half"))
		dead.Put(ctx, "g", strings.NewReader("written"))
		// dead never commits nor aborts: it was killed.

		snap, err := publish.Open(ctx, s, "ab")
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := snap.ReadFile(ctx, "f"); string(b) != "committed" || len(snap.Files()) != 1 {
			t.Fatalf("abandoned generation visible: f=%q files=%v", b, snap.Files())
		}
		grace := 10 * time.Minute
		clk.t = clk.t.Add(grace) // exactly the grace: still kept
		res, err := publish.GC(ctx, s, "ab", &publish.GCOptions{Grace: grace, Now: clk.now})
		if err != nil || len(res.Deleted) != 0 || len(res.Kept) != 1 || res.Kept[0] != dead.ID() {
			t.Fatalf("GC within grace = %+v, %v; want %s kept", res, err, dead.ID())
		}
		clk.t = clk.t.Add(time.Second)
		res, err = publish.GC(ctx, s, "ab", &publish.GCOptions{Grace: grace, Now: clk.now, DryRun: true})
		if err != nil || len(res.Deleted) != 1 || res.Objects != 2 {
			t.Fatalf("dry run = %+v, %v", res, err)
		}
		if n := len(keysUnder(t, ctx, s, "ab/gen/"+dead.ID()+"/")); n != 2 {
			t.Fatalf("dry run deleted objects: %d left", n)
		}
		res, err = publish.GC(ctx, s, "ab", &publish.GCOptions{Grace: grace, Now: clk.now})
		if err != nil || len(res.Deleted) != 1 || res.Deleted[0] != dead.ID() || res.Current != snap.Generation() {
			t.Fatalf("GC after grace = %+v, %v", res, err)
		}
		if n := len(keysUnder(t, ctx, s, "ab/gen/"+dead.ID()+"/")); n != 0 {
			t.Fatalf("GC left %d objects of the abandoned generation", n)
		}
		if b, err := snap.ReadFile(ctx, "f"); err != nil || string(b) != "committed" {
			t.Fatalf("current generation damaged by GC: %q, %v", b, err)
		}
	})
}

// TestGCModel drives random commits, abandoned writers, clock steps and GC
// runs, and checks GC against a model: never the current generation, never
// a young one, always an old non-current one.
func TestGCModel(t *testing.T) {
	seed := *gcSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -publish.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		grace := time.Hour
		began := map[string]time.Time{} // every generation still expected
		current := ""
		for step := 0; step < 300; step++ {
			switch op := rng.IntN(10); {
			case op < 3: // commit
				w, err := publish.Begin(ctx, s, "m", &publish.Options{Now: clk.now})
				if err != nil {
					t.Fatal(err)
				}
				w.Put(ctx, "x", strings.NewReader(w.ID()))
				if _, err := w.Commit(ctx); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				began[w.ID()] = clk.t
				current = w.ID()
			case op < 5: // abandoned writer
				w, _ := publish.Begin(ctx, s, "m", &publish.Options{Now: clk.now})
				for i := rng.IntN(3); i >= 0; i-- {
					w.Put(ctx, fmt.Sprint(i), strings.NewReader("a"))
				}
				began[w.ID()] = clk.t
			case op < 8:
				clk.t = clk.t.Add(time.Duration(rng.IntN(40)) * time.Minute)
			default:
				res, err := publish.GC(ctx, s, "m", &publish.GCOptions{Grace: grace, Now: clk.now})
				if err != nil {
					t.Fatalf("step %d: gc: %v", step, err)
				}
				deleted := map[string]bool{}
				for _, id := range res.Deleted {
					deleted[id] = true
					if id == current {
						t.Fatalf("seed %d step %d: GC deleted the current generation %s", seed, step, id)
					}
					if clk.t.Sub(began[id]) <= grace {
						t.Fatalf("seed %d step %d: GC deleted young generation %s", seed, step, id)
					}
					delete(began, id)
				}
				for id, b := range began {
					if id != current && clk.t.Sub(b) > grace && !deleted[id] {
						t.Fatalf("seed %d step %d: GC kept old generation %s", seed, step, id)
					}
				}
			}
		}
		if current == "" {
			return
		}
		snap, err := publish.Open(ctx, s, "m")
		if err != nil || snap.Generation() != current {
			t.Fatalf("current = %v, %v; want %s", snap, err, current)
		}
		if b, err := snap.ReadFile(ctx, "x"); err != nil || string(b) != current {
			t.Fatalf("current x = %q, %v", b, err)
		}
	})
}
