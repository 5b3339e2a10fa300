package leasetest

import (
	"context"
	"errors"
	"fmt"
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
	var gotAt time.Time // written before the send on got
	waiter := e.locker(t, nil, e.opts("waiter"))
	poll := waiter.Options().PollInterval
	go func() {
		l, err := waiter.Acquire(t.Context())
		if err != nil {
			t.Errorf("waiter Acquire: %v", err)
		}
		gotAt = time.Now()
		got <- l
	}()
	e.sleep(3 * e.ttl) // the holder renews; the waiter must not take over
	select {
	case l := <-got:
		if e.synct || l == nil {
			t.Fatal("the waiter acquired a lease that was being renewed")
		}
		// On the real clock the holder's renews can be starved for its
		// whole validity; a takeover is then correct, but only after the
		// holder's validity ended at least Margin before it.
		e.checkStopped(t, a, gotAt.Add(-e.ttl/5), "waiter took over")
		if !errors.Is(a.Err(), lease.ErrLost) {
			t.Fatalf("the waiter acquired while the holder's lease was %v, want lost", a.Err())
		}
		t.Logf("the holder was scheduled too late to renew; the waiter took over (token %d)", l.Token())
		l.Release(t.Context())
		return
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
	wantSuccessor(t, l, a, "waiter")
}

// holdLong holds the lease as "holder" with ten times the suite's TTL, so
// that no scheduling delay of its renews can let a contender take over
// while a subtest watches its waiters.
func (e *env) holdLong(t *testing.T) *lease.Lease {
	ho := e.opts("holder")
	ho.TTL, ho.Margin = 10*e.ttl, 2*e.ttl
	a, err := e.locker(t, nil, ho).Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testAcquireTimeout(t *testing.T, e *env) {
	// The holder's TTL outlasts the waiter's deadline many times, so no
	// scheduling delay of its renews can let the waiter take over.
	a := e.holdLong(t)
	defer a.Release(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 2*e.ttl)
	defer cancel()
	_, err := e.locker(t, nil, e.opts("waiter")).Acquire(ctx)
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
//
// The holder's TTL is ten times the waiters' (whose PollInterval follows
// their own TTL), so no waiter can take over within the window, however
// late the machine runs the holder's renews. The absolute budget is
// strict on either clock: a loaded machine only stretches the waits
// between polls. That 16 waiters read at most about twice as often as 1
// is checked on fake time only, since on the real clock load can starve
// the single waiter's run.
func testSharedPoller(t *testing.T, e *env) {
	a := e.holdLong(t)
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
					t.Errorf("a waiter acquired a renewed lease (token %d)", l.Token())
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
	if e.synct && many > 2*one+4 {
		t.Errorf("16 waiters made %d reads, 1 waiter %d: the budget grows with the waiters", many, one)
	}
}

// watching counts reads and native-watch calls, passing both through.
type watching struct {
	store.Store
	w       store.Watcher
	gets    atomic.Int64
	watches atomic.Int64
}

func (c *watching) Get(ctx context.Context, key string) (store.Entry, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *watching) WaitChange(ctx context.Context, key string, last store.Version) error {
	c.watches.Add(1)
	return c.w.WaitChange(ctx, key, last)
}

// testAcquireWatches: on a backend with a native watch, a waiter blocks
// on it instead of polling. While a holder (whose TTL outlasts the window)
// leaves the record unchanged, waiting for 2 TTLs costs a few reads, where
// polling would cost one per PollInterval (about 20). A backend without a
// watch has nothing to check here: testSharedPoller bounds its polling.
func testAcquireWatches(t *testing.T, e *env) {
	w, ok := e.s.(store.Watcher)
	if !ok || !e.s.Capabilities().Watch {
		t.Log("the backend has no native watch; Acquire polls (see the shared-poller subtest)")
		return
	}
	a := e.holdLong(t)
	defer a.Release(t.Context())
	c := &watching{Store: e.s, w: w}
	ctx, cancel := context.WithTimeout(t.Context(), 2*e.ttl)
	defer cancel()
	if l, err := e.locker(t, c, e.opts("waiter")).Acquire(ctx); err == nil {
		t.Fatalf("the waiter acquired a held lease (token %d)", l.Token())
	}
	gets, watches := c.gets.Load(), c.watches.Load()
	t.Logf("waiting 2 TTLs on an unchanged record: %d reads, %d watch calls", gets, watches)
	if watches == 0 || gets > 4 {
		t.Errorf("waiting 2 TTLs on an unchanged record: %d reads, %d watch calls; want the native watch used and at most 4 reads", gets, watches)
	}
}

// testQueueOrder: waiters in Lockers of their own (processes of their own)
// arrive one after another while the lease is held; they are served in
// the order they arrived, and the last one out leaves the waiting line
// empty. On the real clock the waiters get five times the suite's TTL, so
// that a loaded machine pausing one of them for half a TTL (which makes
// the others take its ticket for gone, and costs it its turn) stays
// unlikely.
func testQueueOrder(t *testing.T, e *env) {
	a, err := e.locker(t, nil, e.opts("holder")).Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	var want []string
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		want = append(want, name)
		o := e.opts(name)
		if !e.synct {
			o.TTL, o.Margin = 5*e.ttl, e.ttl
		}
		lk := e.locker(t, nil, o)
		wg.Go(func() {
			err := lk.Run(t.Context(), func(ctx context.Context, l *lease.Lease) error {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		})
		// The next one arrives once this one has its place.
		deadline := time.Now().Add(10 * e.ttl)
		for {
			q, err := lease.InspectQueue(t.Context(), e.s, e.key)
			if err != nil {
				t.Fatalf("InspectQueue: %v", err)
			}
			if len(q.Tickets) == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiter %s has no place in the queue after %v: %d tickets", name, 10*e.ttl, len(q.Tickets))
			}
			e.sleep(10 * time.Millisecond)
		}
	}
	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("holders in the order %v, want the order of arrival %v", order, want)
	}
	q, err := lease.InspectQueue(t.Context(), e.s, e.key)
	if err != nil {
		t.Fatalf("InspectQueue: %v", err)
	}
	if len(q.Tickets) != 0 {
		t.Errorf("the queue after everyone held the lease: %d tickets, want none", len(q.Tickets))
	}
}
