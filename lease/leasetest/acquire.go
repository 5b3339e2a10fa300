package leasetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

func testAcquireWaits(t *testing.T, e *env) {
	a, err := e.locker(t, nil, e.opts("holder")).Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lease.Lease, 1)
	waiter := e.locker(t, nil, e.opts("waiter"))
	poll := waiter.Options().PollInterval
	go func() {
		l, err := waiter.Acquire(t.Context())
		if err != nil {
			t.Errorf("waiter Acquire: %v", err)
		}
		got <- l
	}()
	e.sleep(3 * e.ttl) // the holder renews; the waiter must not take over
	select {
	case <-got:
		t.Fatal("the waiter acquired a lease that was being renewed")
	default:
	}
	released := time.Now()
	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		return
	}
	if d := time.Since(released); e.synct && d > poll*3/2+time.Millisecond {
		t.Errorf("waiter acquired %v after the release; want within 1.5 PollInterval (%v)", d, poll)
	}
	if l.Token() != a.Token()+1 {
		t.Errorf("waiter token = %d, want %d", l.Token(), a.Token()+1)
	}
}

func testAcquireTimeout(t *testing.T, e *env) {
	a, err := e.locker(t, nil, e.opts("holder")).Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 2*e.ttl)
	defer cancel()
	_, err = e.locker(t, nil, e.opts("waiter")).Acquire(ctx)
	var held *lease.HeldError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &held) || held.Holder != "holder" {
		t.Fatalf("Acquire past its deadline: %v, want DeadlineExceeded and a HeldError naming the holder", err)
	}
}

// counting counts reads; it passes Watch through when the inner store has
// it.
type counting struct {
	store.Store
	gets atomic.Int64
}

func (c *counting) Get(ctx context.Context, key string) (store.Entry, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counting) Capabilities() store.Capabilities {
	caps := c.Store.Capabilities()
	caps.Watch = false // counting has no WaitChange: Acquire must poll
	return caps
}

// testSharedPoller: 1 and 16 goroutines wait through one Locker for the
// same time (4 TTLs, 2 on the real clock); the reads they cause must not
// grow with their number.
func testSharedPoller(t *testing.T, e *env) {
	a, err := e.locker(t, nil, e.opts("holder")).Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(t.Context())
	window := 4 * e.ttl
	if !e.synct {
		window = 2 * e.ttl
	}
	reads := func(waiters int) int64 {
		c := &counting{Store: e.s}
		lk := e.locker(t, c, e.opts("waiters"))
		ctx, cancel := context.WithTimeout(t.Context(), window)
		defer cancel()
		var wg sync.WaitGroup
		for range waiters {
			wg.Go(func() {
				if l, err := lk.Acquire(ctx); err == nil {
					if e.synct {
						t.Errorf("a waiter acquired a renewed lease (token %d)", l.Token())
					} else {
						t.Logf("the holder was scheduled too late to renew; a waiter took over (token %d)", l.Token())
					}
					l.Release(t.Context())
				}
			})
		}
		wg.Wait()
		return c.gets.Load()
	}
	one, many := reads(1), reads(16)
	poll := e.locker(t, nil, e.opts("x")).Options().PollInterval
	budget := int64(window/(poll/2)) + 4
	t.Logf("reads over %v: 1 waiter %d, 16 waiters %d (budget %d)", window, one, many, budget)
	if one > budget || many > budget {
		t.Errorf("reads over %v: 1 waiter %d, 16 waiters %d; want each at most %d", window, one, many, budget)
	}
	if many > 2*one+4 {
		t.Errorf("16 waiters made %d reads, 1 waiter %d: the budget grows with the waiters", many, one)
	}
}
