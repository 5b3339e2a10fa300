package publishtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

var gcSeed = flag.Uint64("publish.seed", 0, "seed of TestGCModel (0: random)")

// testAbandonedGeneration: a writer that dies before committing leaves a
// generation that readers never see and GC removes after the grace.
func (h Harness) testAbandonedGeneration(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		opts := &publish.Options{Now: clk.Now}
		w := Begin(t, ctx, s, "ab", opts)
		Put(t, ctx, w, "f", "committed")
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		dead := Begin(t, ctx, s, "ab", opts)
		Put(t, ctx, dead, "f", "half")
		Put(t, ctx, dead, "g", "written")
		// dead never commits nor aborts: it was killed.

		snap, err := publish.Open(ctx, s, "ab")
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := snap.ReadFile(ctx, "f"); string(b) != "committed" || len(snap.Files()) != 1 {
			t.Fatalf("abandoned generation visible: f=%q files=%v", b, snap.Files())
		}
		grace := 10 * time.Minute
		clk.T = clk.T.Add(grace) // exactly the grace: still kept
		res, err := publish.GC(ctx, s, "ab", &publish.GCOptions{Grace: grace, Now: clk.Now})
		if err != nil || len(res.Deleted) != 0 || len(res.Kept) != 1 || res.Kept[0] != dead.ID() {
			t.Fatalf("GC within grace = %+v, %v; want %s kept", res, err, dead.ID())
		}
		want := publish.Generation{ID: dead.ID(), State: publish.Unfinished, Began: clk.T.Add(-grace),
			GraceEnds: clk.T, Objects: 2}
		if len(res.Generations) != 1 || res.Generations[0] != want {
			t.Fatalf("GC within grace described %+v; want [%+v]", res.Generations, want)
		}
		clk.T = clk.T.Add(time.Second)
		res, err = publish.GC(ctx, s, "ab", &publish.GCOptions{Grace: grace, Now: clk.Now, DryRun: true})
		if err != nil || len(res.Deleted) != 1 || res.Objects != 2 {
			t.Fatalf("dry run = %+v, %v", res, err)
		}
		if n := len(Keys(t, ctx, s, "ab/gen/"+dead.ID()+"/")); n != 2 {
			t.Fatalf("dry run deleted objects: %d left", n)
		}
		res, err = publish.GC(ctx, s, "ab", &publish.GCOptions{Grace: grace, Now: clk.Now})
		if err != nil || len(res.Deleted) != 1 || res.Deleted[0] != dead.ID() || res.Current != snap.Generation() {
			t.Fatalf("GC after grace = %+v, %v", res, err)
		}
		if n := len(Keys(t, ctx, s, "ab/gen/"+dead.ID()+"/")); n != 0 {
			t.Fatalf("GC left %d objects of the abandoned generation", n)
		}
		if b, err := snap.ReadFile(ctx, "f"); err != nil || string(b) != "committed" {
			t.Fatalf("current generation damaged by GC: %q, %v", b, err)
		}
	})
}

// testGCKeepsRecentlySuperseded: a generation that was current for longer
// than the grace period and then superseded is kept for a whole grace
// period after its successor's commit, so a reader that opened it just
// before is safe; afterwards GC removes it and the reader gets
// ErrNotFound, never other bytes.
func (h Harness) testGCKeepsRecentlySuperseded(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		grace := time.Hour
		old := PublishAt(t, ctx, s, "rs", clk, "old")
		clk.T = clk.T.Add(3 * grace)
		snap, err := publish.Open(ctx, s, "rs")
		if err != nil || snap.Generation() != old {
			t.Fatalf("Open = %v, %v", snap, err)
		}
		PublishAt(t, ctx, s, "rs", clk, "new")
		clk.T = clk.T.Add(grace)
		res, err := publish.GC(ctx, s, "rs", &publish.GCOptions{Grace: grace, Now: clk.Now})
		if err != nil || len(res.Deleted) != 0 || len(res.Kept) != 1 || res.Kept[0] != old {
			t.Fatalf("GC one grace after the supersession = %+v, %v; want %s kept", res, err, old)
		}
		if b, err := snap.ReadFile(ctx, "x"); err != nil || string(b) != "old" {
			t.Fatalf("reader of the superseded generation: %q, %v", b, err)
		}
		clk.T = clk.T.Add(time.Second)
		res, err = publish.GC(ctx, s, "rs", &publish.GCOptions{Grace: grace, Now: clk.Now})
		if err != nil || len(res.Deleted) != 1 || res.Deleted[0] != old {
			t.Fatalf("GC past the grace = %+v, %v; want %s deleted", res, err, old)
		}
		if b, err := snap.ReadFile(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("reader past the grace: %q, %v; want ErrNotFound", b, err)
		}
	})
}

// PublishAt commits one object x with body at the clock's time and
// returns the generation.
func PublishAt(t *testing.T, ctx context.Context, s store.Store, prefix string, clk *Clock, body string) string {
	t.Helper()
	w, err := publish.Begin(ctx, s, prefix, &publish.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, "x", strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

// modelGen is what the GC model knows of one generation.
type modelGen struct {
	began      time.Time
	committed  bool
	superseded time.Time // when its successor committed; zero while current or never committed
}

// pendingWriter is a writer of the model that has begun and not finished.
type pendingWriter struct {
	w     *publish.Writer
	base  string    // the generation current when it began
	began time.Time // the clock when it began
}

// testGCModel drives random writers (begun, then committed, superseded,
// too old, or killed), clock steps and GC runs, and checks every GC
// against a model: it deletes exactly the generations that are neither
// current nor within the grace period of their beginning or of their
// supersession, and Commit's outcome is the model's.
func (h Harness) testGCModel(t *testing.T) {
	seed := *gcSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -publish.seed=%d)", seed, seed)
	h.forEach(t, func(t *testing.T, s store.Store) {
		rng := rand.New(rand.NewPCG(seed, seed))
		ctx := context.Background()
		clk := &Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		const grace, maxAge = time.Hour, 30 * time.Minute
		gens := map[string]*modelGen{} // every generation still stored
		var pending []pendingWriter
		current := ""
		fail := func(step int, format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
		}
		for step := 0; step < 300; step++ {
			switch op := rng.IntN(12); {
			case op < 3: // begin a writer
				w, err := publish.Begin(ctx, s, "m", &publish.Options{Now: clk.Now, MaxAge: maxAge})
				if err != nil {
					fail(step, "begin: %v", err)
				}
				n := rng.IntN(3)
				for i := range n {
					if err := w.Put(ctx, fmt.Sprint(i), strings.NewReader(w.ID())); err != nil {
						fail(step, "put: %v", err)
					}
				}
				if n > 0 { // a generation with no objects stores nothing until its manifest
					gens[w.ID()] = &modelGen{began: clk.T}
				}
				pending = append(pending, pendingWriter{w: w, base: current, began: clk.T})
			case op < 6 && len(pending) > 0: // commit one
				i := rng.IntN(len(pending))
				pw := pending[i]
				pending = slices.Delete(pending, i, i+1)
				id := pw.w.ID()
				_, err := pw.w.Commit(ctx)
				switch {
				case clk.T.Sub(pw.began) > maxAge:
					if !errors.Is(err, publish.ErrAbandoned) {
						fail(step, "commit of a writer older than MaxAge = %v, want ErrAbandoned", err)
					}
					delete(gens, id)
				case pw.base != current:
					if !errors.Is(err, publish.ErrSuperseded) {
						fail(step, "commit after another commit = %v, want ErrSuperseded", err)
					}
					delete(gens, id)
				case err != nil:
					fail(step, "commit: %v", err)
				default:
					if current != "" {
						gens[current].superseded = clk.T
					}
					gens[id] = &modelGen{began: pw.began, committed: true}
					current = id
				}
			case op < 7 && len(pending) > 0: // a writer is killed
				i := rng.IntN(len(pending))
				pending = slices.Delete(pending, i, i+1)
			case op < 10:
				clk.T = clk.T.Add(time.Duration(rng.IntN(40)) * time.Minute)
			default:
				gcModelStep(t, ctx, s, clk, grace, gens, current, func(format string, args ...any) { fail(step, format, args...) })
			}
		}
		if current == "" {
			return
		}
		snap, err := publish.Open(ctx, s, "m")
		if err != nil || snap.Generation() != current {
			t.Fatalf("current = %v, %v; want %s", snap, err, current)
		}
		for _, f := range snap.Files() {
			if b, err := snap.ReadFile(ctx, f.Name); err != nil || string(b) != current {
				t.Fatalf("current %s = %q, %v", f.Name, b, err)
			}
		}
	})
}

// gcModelStep runs GC and checks it against the model, then removes what
// it deleted from the model and checks that the store holds exactly the
// model's generations.
func gcModelStep(t *testing.T, ctx context.Context, s store.Store, clk *Clock, grace time.Duration, gens map[string]*modelGen, current string, fail func(string, ...any)) {
	t.Helper()
	res, err := publish.GC(ctx, s, "m", &publish.GCOptions{Grace: grace, Now: clk.Now})
	if err != nil {
		fail("gc: %v", err)
	}
	if res.Current != current {
		fail("gc saw current %q, want %q", res.Current, current)
	}
	deleted := map[string]bool{}
	for _, id := range res.Deleted {
		deleted[id] = true
	}
	for id, g := range gens {
		due := id != current && clk.T.Sub(g.began) > grace &&
			(!g.committed || clk.T.Sub(g.superseded) > grace)
		switch {
		case deleted[id] && id == current:
			fail("GC deleted the current generation %s", id)
		case deleted[id] && !due:
			fail("GC deleted generation %s within its grace (began %s, superseded %s, now %s)", id, g.began, g.superseded, clk.T)
		case !deleted[id] && due:
			fail("GC kept generation %s past its grace", id)
		}
		if deleted[id] {
			delete(gens, id)
		}
	}
	stored := map[string]bool{}
	for _, k := range Keys(t, ctx, s, "m/gen/") {
		stored[strings.Split(k, "/")[2]] = true
	}
	for id := range gens {
		if !stored[id] {
			fail("generation %s is missing from the store", id)
		}
		delete(stored, id)
	}
	for id := range stored {
		fail("store holds generation %s the model does not (a loser left objects behind?)", id)
	}
}

// listHook calls after once, after the first List call has its page: a
// commit that lands while GC is listing.
type listHook struct {
	store.Store
	after func()
	once  sync.Once
}

func (l *listHook) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	p, err := l.Store.List(ctx, prefix, opts)
	l.once.Do(l.after)
	return p, err
}

// testGCRacingCommit: a commit lands while GC lists. The generation it
// replaced was current when GC began (and is long past its own grace by
// age), and its successor's manifest is not in GC's listing; GC must keep
// it because it read the pointer before listing too.
func (h Harness) testGCRacingCommit(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		old := PublishAt(t, ctx, s, "rc", clk, "old")
		clk.T = clk.T.Add(5 * time.Hour)
		reader, err := publish.Open(ctx, s, "rc")
		if err != nil {
			t.Fatal(err)
		}
		var next string
		hooked := &listHook{Store: s, after: func() { next = PublishAt(t, ctx, s, "rc", clk, "new") }}
		res, err := publish.GC(ctx, hooked, "rc", &publish.GCOptions{Grace: time.Hour, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if res.Current != next || len(res.Deleted) != 0 {
			t.Fatalf("GC racing a commit = %+v; want current %s and %s kept", res, next, old)
		}
		if b, err := reader.ReadFile(ctx, "x"); err != nil || string(b) != "old" {
			t.Fatalf("reader of the generation replaced during GC: %q, %v", b, err)
		}
	})
}

// testGCGraceCountsFromSupersession: a Commit that spends 25 minutes
// (within MaxAge) checking its objects before it swaps the pointer still
// leaves the generation it replaced a whole grace period from the swap:
// the manifest, whose Created GC counts from, is written after the check,
// just before the swap.
func (h Harness) testGCGraceCountsFromSupersession(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		const grace, maxAge = time.Hour, 30 * time.Minute
		old := PublishAt(t, ctx, s, "sl", clk, "old")
		clk.T = clk.T.Add(3 * grace)
		snap, err := publish.Open(ctx, s, "sl")
		if err != nil || snap.Generation() != old {
			t.Fatalf("Open = %v, %v", snap, err)
		}
		// The commit's check of its objects (a List) takes 25 minutes.
		slow := &listHook{Store: s, after: func() { clk.T = clk.T.Add(25 * time.Minute) }}
		w, err := publish.Begin(ctx, slow, "sl", &publish.Options{Now: clk.Now, MaxAge: maxAge})
		if err != nil {
			t.Fatal(err)
		}
		began := clk.T
		Put(t, ctx, w, "x", "new")
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		swapped := clk.T
		if swapped.Sub(began) != 25*time.Minute {
			t.Fatalf("the commit took %v of fake time, want 25m (the hook did not run?)", swapped.Sub(began))
		}
		clk.T = swapped.Add(grace - time.Minute)
		res, err := publish.GC(ctx, s, "sl", &publish.GCOptions{Grace: grace, Now: clk.Now})
		if err != nil || len(res.Deleted) != 0 {
			t.Fatalf("GC %v after the supersession (grace %v) = %+v, %v; want %s kept", clk.T.Sub(swapped), grace, res, err, old)
		}
		if b, err := snap.ReadFile(ctx, "x"); err != nil || string(b) != "old" {
			t.Fatalf("reader of the superseded generation within the grace: %q, %v", b, err)
		}
		clk.T = swapped.Add(grace + time.Second)
		res, err = publish.GC(ctx, s, "sl", &publish.GCOptions{Grace: grace, Now: clk.Now})
		if err != nil || len(res.Deleted) != 1 || res.Deleted[0] != old {
			t.Fatalf("GC a grace after the supersession = %+v, %v; want %s deleted", res, err, old)
		}
	})
}

// testCommitRefusesLateSwap: a pointer write that would come more than
// MaxSwapDelay after the manifest (here the commit's read of the pointer
// takes two minutes) is refused, so GC's grace, counted from the
// manifest, is never cut by more than that; nothing was published and
// the generation is gone.
func (h Harness) testCommitRefusesLateSwap(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := &Clock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		old := PublishAt(t, ctx, s, "ls", clk, "old")
		slow := &GetHook{Store: s, Suffix: "-", Before: func() { clk.T = clk.T.Add(publish.MaxSwapDelay + time.Minute) }}
		w2, err := publish.Begin(ctx, slow, "ls", &publish.Options{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := w2.Put(ctx, "x", strings.NewReader("late")); err != nil {
			t.Fatal(err)
		}
		slow.Suffix = "ls/pointer" // from now on: the commit's read of the pointer
		if _, err := w2.Commit(ctx); !errors.Is(err, publish.ErrAbandoned) {
			t.Fatalf("Commit whose pointer swap comes %v after its manifest = %v, want ErrAbandoned", publish.MaxSwapDelay+time.Minute, err)
		}
		snap, err := publish.Open(ctx, s, "ls")
		if err != nil || snap.Generation() != old {
			t.Fatalf("current = %v, %v; want %s still", snap, err, old)
		}
		if n := len(Keys(t, ctx, s, "ls/gen/"+w2.ID()+"/")); n != 0 {
			t.Errorf("%d objects of the refused generation left", n)
		}
	})
}

// testCommitAfterGCRemovedObjects: a GC run with a grace shorter than a
// writer's life removes its uncommitted generation as abandoned; the
// writer's Commit notices and publishes nothing, instead of a pointer to
// missing objects.
func (h Harness) testCommitAfterGCRemovedObjects(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		Publish(t, ctx, s, "gr", map[string]string{"f": "v1"})
		w := Begin(t, ctx, s, "gr", nil)
		Put(t, ctx, w, "f", "v2")
		Put(t, ctx, w, "g", "v2")
		later := func() time.Time { return time.Now().Add(time.Minute) }
		if res, err := publish.GC(ctx, s, "gr", &publish.GCOptions{Grace: time.Second, Now: later}); err != nil || len(res.Deleted) != 1 {
			t.Fatalf("GC = %+v, %v", res, err)
		}
		if _, err := w.Commit(ctx); !errors.Is(err, publish.ErrAbandoned) {
			t.Fatalf("Commit of a generation GC removed = %v, want ErrAbandoned", err)
		}
		snap, err := publish.Open(ctx, s, "gr")
		if err != nil {
			t.Fatal(err)
		}
		if b, err := snap.ReadFile(ctx, "f"); err != nil || string(b) != "v1" {
			t.Fatalf("f = %q, %v; want the first generation intact", b, err)
		}
	})
}

// testReadersRacingShortGraceGC: writers commit and GC runs with a short
// grace while readers read snapshots and hold some of them across many
// commits. Time is a shared fake clock that only the writer advances,
// between its commits, so a writer's life is within the grace, as the
// grace's contract requires, while superseded generations go two commits
// later. A reader whose generation was removed gets ErrNotFound (or
// ErrCorrupt), never bytes of another generation; the generation the
// pointer names is never missing an object (never half-visible).
func (h Harness) testReadersRacingShortGraceGC(t *testing.T) {
	h.forEach(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		var fake atomic.Int64
		fake.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
		now := func() time.Time { return time.Unix(0, fake.Load()) }
		const grace = 30 * time.Minute
		w, _ := publish.Begin(ctx, s, "sg", &publish.Options{Now: now})
		w.Put(ctx, "a", strings.NewReader("0:a"))
		w.Put(ctx, "b", strings.NewReader("0:b"))
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		var clean, gone, collected atomic.Int64
		wg.Go(func() {
			defer stop.Store(true)
			for i := 1; i <= 15; i++ {
				w, err := publish.Begin(ctx, s, "sg", &publish.Options{Now: now})
				if err != nil {
					t.Error(err)
					return
				}
				for _, name := range []string{"a", "b"} {
					if err := w.Put(ctx, name, strings.NewReader(fmt.Sprintf("%d:%s", i, name))); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := w.Commit(ctx); err != nil {
					t.Error(err)
					return
				}
				fake.Add(int64(20 * time.Minute))
				time.Sleep(time.Millisecond) // let readers open this generation
			}
		})
		wg.Go(func() {
			for !stop.Load() {
				res, err := publish.GC(ctx, s, "sg", &publish.GCOptions{Grace: grace, Now: now})
				if err != nil {
					t.Error(err)
					return
				}
				collected.Add(int64(len(res.Deleted)))
				time.Sleep(time.Millisecond) // leave the store to writers and readers too
			}
		})
		for r := range 3 {
			wg.Go(func() {
				for !stop.Load() {
					snap, err := publish.Open(ctx, s, "sg")
					if errors.Is(err, store.ErrNotFound) {
						gone.Add(1) // its manifest went between pointer and manifest read
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					if err := readWhole(ctx, s, snap, time.Duration(r)*2*time.Millisecond); errors.Is(err, errCollected) {
						gone.Add(1)
						continue
					} else if err != nil {
						t.Error(err)
						return
					}
					clean.Add(1)
				}
			})
		}
		wg.Wait()
		t.Logf("%d snapshots read whole, %d found their generation collected, %d generations collected", clean.Load(), gone.Load(), collected.Load())
		if clean.Load() == 0 || collected.Load() == 0 {
			t.Fatal("the test exercised nothing")
		}
	})
}

var errCollected = errors.New("generation collected")

// readWhole reads a and b of snap, pausing hold between them, and checks
// that both are of one generation. It returns errCollected when GC removed
// the generation, after checking it is not the current one.
func readWhole(ctx context.Context, s store.Store, snap *publish.Snapshot, hold time.Duration) error {
	gen := ""
	for _, name := range []string{"a", "b"} {
		b, err := snap.ReadFile(ctx, name)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, publish.ErrCorrupt) {
			if cur, err := publish.Open(ctx, s, "sg"); err == nil && cur.Generation() == snap.Generation() {
				return fmt.Errorf("current generation %s misses %s: half-visible", snap.Generation(), name)
			}
			return errCollected
		}
		num, _, ok := strings.Cut(string(b), ":")
		if err != nil || !ok || string(b) != num+":"+name || (gen != "" && num != gen) {
			return fmt.Errorf("snapshot %s read %s = %q, %v (other file from %q)", snap.Generation(), name, b, err, gen)
		}
		gen = num
		time.Sleep(hold) // some readers hold their snapshot across commits
	}
	return nil
}
