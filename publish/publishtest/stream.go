package publishtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

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
