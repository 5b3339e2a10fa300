package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// The race subtests prove the atomicity a backend claims in Capabilities:
// among writers racing on one condition exactly one may win.

var raceTests = []subtest{
	{name: "32 concurrent PutIfAbsent: exactly one wins", need: hasCreate, run: testCreateRace},
	{name: "16 concurrent PutIfMatch on one version: exactly one wins", need: hasCAS, run: testCASRace},
	{name: "16 concurrent DeleteIfMatch on one version: exactly one wins", need: hasCAD, run: testDeleteRace},
	{name: "8 workers x 25 CAS increments sum to exactly 200", need: hasCAS, run: testCounter},
}

// race runs n calls of f at once (released together) and returns their
// results. f runs on its own goroutine and must not touch t.
func race[R any](n int, f func(i int) R) []R {
	out := make([]R, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

type putResult struct {
	v   store.Version
	err error
}

// oneWinner checks that exactly one of errs is nil and every other matches
// ErrConflict, and returns the winner's index (-1 if none).
func oneWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: writers %d and %d both won", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("%s: writer %d: err = %v, want nil or ErrConflict", what, i, err)
		}
	}
	if winner < 0 {
		t.Errorf("%s: no writer won", what)
	}
	return winner
}

func testCreateRace(t *testing.T, h Harness) {
	putRace(t, h, 32, func(context.Context, store.Store, string) store.Condition { return store.IfAbsent })
}

func testCASRace(t *testing.T, h Harness) {
	putRace(t, h, 16, func(ctx context.Context, s store.Store, key string) store.Condition {
		return store.IfMatch(put(t, ctx, s, key, []byte("start"), store.Unconditional))
	})
}

// putRace runs rounds of n writers racing one conditional Put of a key,
// under the condition cond prepares: exactly one may win, and the key must
// then hold the winner's value at the winner's version.
func putRace(t *testing.T, h Harness, n int, cond func(ctx context.Context, s store.Store, key string) store.Condition) {
	ctx, s := h.open(t)
	for round := range h.scaled(3, 1) {
		key := fmt.Sprintf("race/%d", round)
		c := cond(ctx, s, key)
		res := race(n, func(i int) putResult {
			v, err := s.Put(ctx, key, fmt.Appendf(nil, "writer %d", i), c)
			return putResult{v, err}
		})
		errs := make([]error, n)
		for i, r := range res {
			errs[i] = r.err
		}
		w := oneWinner(t, fmt.Sprintf("round %d", round), errs)
		if w >= 0 {
			wantEntry(t, ctx, s, key, fmt.Appendf(nil, "writer %d", w), res[w].v)
		}
	}
}

func testDeleteRace(t *testing.T, h Harness) {
	ctx, s := h.open(t)
	const n = 16
	for round := range h.scaled(3, 1) {
		key := fmt.Sprintf("race/%d", round)
		v0 := put(t, ctx, s, key, []byte("doomed"), store.Unconditional)
		errs := race(n, func(int) error { return s.Delete(ctx, key, store.IfMatch(v0)) })
		oneWinner(t, fmt.Sprintf("round %d", round), errs)
		wantMissing(t, ctx, s, key)
	}
}

// maxAttempts bounds one worker's attempts at one increment.
const maxAttempts = 10000

type counterResult struct {
	wrote     []int // the values this worker's successful CAS writes stored
	versions  []store.Version
	conflicts int
	err       error
}

func testCounter(t *testing.T, h Harness) {
	ctx, s := h.open(t)
	const workers = 8
	per := h.scaled(25, 5)
	put(t, ctx, s, "counter", []byte("0"), store.Unconditional)
	res := race(workers, func(w int) counterResult {
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		var r counterResult
		for range per {
			n, v, conflicts, err := increment(ctx, s, "counter", rng)
			r.conflicts += conflicts
			if err != nil {
				r.err = fmt.Errorf("worker %d after %d increments: %w", w, len(r.wrote), err)
				return r
			}
			r.wrote = append(r.wrote, n)
			r.versions = append(r.versions, v)
		}
		return r
	})
	wrote := map[int]int{}
	versions := map[store.Version]int{}
	conflicts := 0
	for w, r := range res {
		conflicts += r.conflicts
		if r.err != nil {
			t.Error(r.err)
		}
		for i, n := range r.wrote {
			if prev, dup := wrote[n]; dup {
				t.Errorf("workers %d and %d both stored %d: a lost update", prev, w, n)
			}
			wrote[n] = w
			if prev, dup := versions[r.versions[i]]; dup {
				t.Errorf("workers %d and %d both got version %q", prev, w, r.versions[i])
			}
			versions[r.versions[i]] = w
		}
	}
	want := workers * per
	e := get(t, ctx, s, "counter")
	if got, err := strconv.Atoi(string(e.Value)); err != nil || got != want {
		t.Errorf("counter = %q after %d workers x %d increments, want %d", e.Value, workers, per, want)
	}
	if len(wrote) != want {
		t.Errorf("%d successful increments, want %d", len(wrote), want)
	}
	t.Logf("%d increments cost %d conflicts", want, conflicts)
}

// increment adds one to the decimal counter at key with a bounded
// get→put-if-match loop, and returns the value it stored and the number
// of conflicts it met.
func increment(ctx context.Context, s store.Store, key string, rng *rand.Rand) (int, store.Version, int, error) {
	for attempt := range maxAttempts {
		e, err := s.Get(ctx, key)
		if err != nil {
			return 0, "", attempt, err
		}
		n, err := strconv.Atoi(string(e.Value))
		if err != nil {
			return 0, "", attempt, fmt.Errorf("counter holds %q: %w", e.Value, err)
		}
		runtime.Gosched() // widen the read-modify-write window so workers interleave
		v, err := s.Put(ctx, key, strconv.AppendInt(nil, int64(n+1), 10), store.IfMatch(e.Version))
		if err == nil {
			return n + 1, v, attempt, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return 0, "", attempt, err
		}
		if attempt > 8 { // back off a little under heavy contention
			time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
		}
	}
	return 0, "", maxAttempts, fmt.Errorf("no increment after %d attempts", maxAttempts)
}
