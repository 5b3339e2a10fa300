package lease_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
)

// counted counts requests to a store.
type counted struct {
	store.Store
	n, total *atomic.Int64
}

func (c counted) Get(ctx context.Context, key string) (store.Entry, error) {
	c.n.Add(1)
	c.total.Add(1)
	return c.Store.Get(ctx, key)
}

func (c counted) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	c.n.Add(1)
	c.total.Add(1)
	return c.Store.Put(ctx, key, v, cond)
}

// countedWatch is counted with the store's native watch passed through
// (a wait is not counted: it is not a request to the store).
type countedWatch struct{ counted }

func (c countedWatch) WaitChange(ctx context.Context, key string, last store.Version) error {
	return c.Store.(store.Watcher).WaitChange(ctx, key, last)
}

// BenchmarkHandoff measures, on the directory store, the time from one
// holder's Release to the next holder's Acquire returning, with W
// contenders that each open the directory and poll like separate
// processes (TTL 2s, so PollInterval 200ms); each holder holds for 20ms
// and, after releasing, contends again only once someone else took over. It reports p50 and p99 of the
// handoff and the requests per second a contender sends while it waits in
// Acquire, and all requests per second on the key.
// Run with -benchtime=100x: every iteration is one handoff.
func BenchmarkHandoff(b *testing.B) {
	for _, watch := range []bool{false, true} {
		for _, waiters := range []int{2, 8, 32} {
			b.Run(fmt.Sprintf("watch=%v/waiters=%d", watch, waiters), func(b *testing.B) {
				benchHandoff(b, waiters, 2*time.Second, false, watch)
			})
		}
	}
	b.Run("one-locker/waiters=32", func(b *testing.B) {
		benchHandoff(b, 32, 2*time.Second, true, false)
	})
}

// benchHandoff: with shared, the waiters are goroutines of one process
// sharing one Locker (one poller, woken at once by a local release).
// With watch, Acquire uses the directory store's native watch (inotify on
// Linux) instead of polling.
func benchHandoff(b *testing.B, waiters int, ttl time.Duration, shared, watch bool) {
	const hold = 20 * time.Millisecond
	dir := b.TempDir()
	var (
		waitReqs  int64
		mu        sync.Mutex
		lat       []time.Duration
		released  time.Time
		waiting   time.Duration // summed over contenders
		handoffs  = b.N
		acquired  = make(chan struct{}) // closed and replaced on every acquisition
		wg        sync.WaitGroup
		ctx, stop = context.WithCancel(context.Background())
	)
	defer stop()
	b.ResetTimer()
	var lk *lease.Locker
	var total atomic.Int64
	began := time.Now()
	reqs := new(atomic.Int64)
	for i := range waiters {
		if lk == nil || !shared {
			fs, err := filestore.Open(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer fs.Close()
			reqs = new(atomic.Int64)
			var cs store.Store = counted{fs, reqs, &total}
			if watch {
				if !fs.Capabilities().Watch {
					b.Skip("the directory store has no native watch on this platform")
				}
				cs = countedWatch{counted{fs, reqs, &total}}
			}
			lk, err = lease.NewLocker(cs, "locks/bench", &lease.Options{Holder: fmt.Sprint(i), TTL: ttl, NoQueue: true}) // the free-for-all; docs/locks.md on the queue
			if err != nil {
				b.Fatal(err)
			}
		}
		lk, reqs := lk, reqs
		wg.Go(func() {
			for {
				start, n0 := time.Now(), reqs.Load()
				l, err := lk.Acquire(ctx)
				got := time.Now()
				if err != nil {
					return
				}
				mu.Lock()
				waiting += got.Sub(start)
				waitReqs += reqs.Load() - n0
				close(acquired)
				acquired = make(chan struct{})
				if !released.IsZero() {
					lat = append(lat, got.Sub(released))
				}
				handoffs--
				last := handoffs <= 0
				mu.Unlock()
				time.Sleep(hold)
				mu.Lock()
				released = time.Now()
				next := acquired
				mu.Unlock()
				l.Release(context.Background())
				if last {
					stop()
					return
				}
				// Contend again only once another contender took over, so
				// every handoff goes to a waiter.
				select {
				case <-next:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if !shared {
		b.ReportMetric(float64(waitReqs)/waiting.Seconds(), "req/s/waiter")
	}
	b.ReportMetric(float64(total.Load())/time.Since(began).Seconds(), "req/s/key")
}
