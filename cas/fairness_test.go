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
}

func (f fairness) String() string {
	return fmt.Sprintf("%d updates (%d failed), p50 %v p99 %v max %v, slowest process %.2f of the mean share",
		f.total, f.failed, f.p50, f.p99, f.max, f.minShare)
}

// measureFairness runs procs processes, each one goroutine updating one
// shared key in a loop for d, and returns what each got done.
func measureFairness(t *testing.T, procs int, d, rtt time.Duration) fairness {
	mem := memstore.New()
	var mu sync.Mutex
	var lat []time.Duration
	f := fairness{counts: make([]int, procs)}
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := range procs {
		p := &proc{Store: mem, rtt: rtt}
		wg.Go(func() {
			for time.Now().Before(end) {
				start := time.Now()
				_, err := Update(context.Background(), p, "fair/k", add, &Options{MaxAttempts: 1 << 20})
				el := time.Since(start)
				mu.Lock()
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
// across processes (issue 26) on fake time: 64 processes, each with its
// own store value, update one key in a loop through a store whose every
// request takes one round trip. It checks that no update is lost or
// doubled, and logs the figures the fairness target is stated in (p99 at
// most 10× p50, no process below half the mean share). Today's figures
// (5 s of fake time, rtt 1 ms): p50 about 11 ms, p99 about 1.1 s, the
// slowest process at about a quarter of the mean share: whoever has just
// won reads first while the others sleep backoffs that grow with every
// loss. A fair Update will assert the target here.
func TestUpdateFairnessFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := measureFairness(t, 64, 3*time.Second, time.Millisecond)
		t.Logf("64 processes: %v", f)
	})
}
