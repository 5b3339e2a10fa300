package cas

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// proc is one process's client of a shared store: a store value of its
// own (so Updates of different procs share no turns and no contention
// memory, as in separate processes), every request taking one round
// trip.
type proc struct {
	store.Store
	rtt time.Duration
}

func (p *proc) Get(ctx context.Context, key string) (store.Entry, error) {
	time.Sleep(p.rtt / 2)
	e, err := p.Store.Get(ctx, key)
	time.Sleep(p.rtt / 2)
	return e, err
}

func (p *proc) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	time.Sleep(p.rtt / 2)
	ver, err := p.Store.Put(ctx, key, v, c)
	time.Sleep(p.rtt / 2)
	return ver, err
}

type fairness struct {
	counts         []int
	p50, p99, max  time.Duration
	minShare, mean float64
	failed, total  int
	attempts       int
	d              time.Duration
}

func (f fairness) String() string {
	return fmt.Sprintf("%d updates (%.0f/s, %d failed, %.2f attempts each), p50 %v p99 %v max %v, slowest process %.2f of the mean share",
		f.total, float64(f.total)/f.d.Seconds(), f.failed, float64(f.attempts)/float64(f.total), f.p50, f.p99, f.max, f.minShare)
}

// measureFairness runs procs processes, each one goroutine updating one
// shared key in a loop for d, and returns what each got done.
func measureFairness(t *testing.T, procs int, d, rtt time.Duration) fairness {
	mem := memstore.New()
	var mu sync.Mutex
	var lat []time.Duration
	f := fairness{counts: make([]int, procs), d: d}
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := range procs {
		p := &proc{Store: mem, rtt: rtt}
		wg.Go(func() {
			for time.Now().Before(end) {
				start := time.Now()
				res, err := Update(context.Background(), p, "fair/k", add, &Options{MaxAttempts: 1 << 20})
				el := time.Since(start)
				mu.Lock()
				f.attempts += res.Attempts
				if err != nil {
					f.failed++
				} else {
					f.counts[i]++
					lat = append(lat, el)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	for _, c := range f.counts {
		f.total += c
	}
	f.mean = float64(f.total) / float64(procs)
	f.minShare = float64(slices.Min(f.counts)) / f.mean
	f.p50, f.p99, f.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	e, err := mem.Get(context.Background(), "fair/k")
	if err != nil || string(e.Value) != fmt.Sprint(f.total) {
		t.Fatalf("counter %q (%v), want %d: an update was lost or doubled", e.Value, err, f.total)
	}
	return f
}

// TestUpdateFairnessFigures reproduces the capture effect of cas.Update
// across processes (issue 26) on fake time: 1, 8 and 64 processes, each
// with its own store value, update one key in a loop through a store
// whose every request takes a 1 ms round trip. It checks that no update is
// lost or doubled, and logs the figures the fairness target is stated in
// (p99 at most 10× p50, no process below half the mean share, and the
// attempts per update, which a fix must not buy fairness with). Today's
// figures at 64 processes: p50 about 12 ms, p99 about 1.1 s, the slowest
// process at about a quarter of the mean share, 4.0 attempts per update:
// whoever has just won reads first while the others sleep backoffs that
// grow with every loss. Backoffs that stop growing (or shrink) after a few
// losses, with a fresh Update first sleeping one remembered ceiling, reach
// p99 ≈ 5–8× p50 and a share of 0.7 here, but at 12–21 attempts per update:
// fairness paid for with 3–5× the store's load. A fair Update (a ticket
// queue) will assert the target here.
func TestUpdateFairnessFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, procs := range []int{1, 8, 64} {
			f := measureFairness(t, procs, 3*time.Second, time.Millisecond)
			t.Logf("%d processes: %v", procs, f)
		}
	})
}
