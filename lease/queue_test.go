package lease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

const qttl = 10 * time.Second

// runTTL is the default TTL, with which the default budget lets three
// tickets at the front heartbeat.
const runTTL = lease.DefaultTTL

// conn counts the requests sent through it, and fails every one once
// killed, as if its process had died (a dead waiter's ticket stays).
type conn struct {
	store.Store
	n      atomic.Int64
	killed atomic.Bool
}

var errKilled = errors.New("the process was killed")

func (c *conn) Get(ctx context.Context, key string) (store.Entry, error) {
	if c.killed.Load() {
		return store.Entry{}, errKilled
	}
	c.n.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *conn) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	if c.killed.Load() {
		return "", errKilled
	}
	c.n.Add(1)
	return c.Store.Put(ctx, key, v, cond)
}

func (c *conn) Delete(ctx context.Context, key string, cond store.Condition) error {
	if c.killed.Load() {
		return errKilled
	}
	c.n.Add(1)
	return c.Store.Delete(ctx, key, cond)
}

// queueBed is a lease with a holder and waiters, each waiter a Locker of
// its own (a process of its own) on its own conn connection.
type queueBed struct {
	t      *testing.T
	s      store.Store
	holder *lease.Lease
	mu     sync.Mutex
	order  []string       // holders in the order they acquired
	spans  [][2]time.Time // when each holding began and ended, in order
	conns  map[string]*conn
	cancel map[string]context.CancelFunc
	errs   map[string]error
	wg     sync.WaitGroup
	hold   time.Duration // how long each waiter holds once it has the lease
}

func newQueueBed(t *testing.T) *queueBed {
	s := leasetest.WithoutWatch(memstore.New()) // waiters poll as on an object store
	lk, err := lease.NewLocker(s, "locks/job", &lease.Options{Holder: "first", TTL: qttl})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lk.Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &queueBed{t: t, s: s, holder: l, conns: map[string]*conn{}, cancel: map[string]context.CancelFunc{},
		errs: map[string]error{}, hold: time.Second}
}

// arrive starts waiter name and returns once it has taken its place.
func (b *queueBed) arrive(name string, o *lease.Options) {
	c := &conn{Store: b.s}
	if o == nil {
		o = &lease.Options{}
	}
	o.Holder = name
	if o.TTL == 0 {
		o.TTL = qttl
	}
	lk, err := lease.NewLocker(c, "locks/job", o)
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.t.Context())
	b.mu.Lock()
	b.conns[name], b.cancel[name] = c, cancel
	b.mu.Unlock()
	b.wg.Go(func() {
		err := lk.Run(ctx, func(ctx context.Context, l *lease.Lease) error {
			b.mu.Lock()
			b.order = append(b.order, name)
			began := time.Now()
			b.mu.Unlock()
			time.Sleep(b.hold)
			b.mu.Lock()
			b.spans = append(b.spans, [2]time.Time{began, time.Now()})
			b.mu.Unlock()
			return nil
		})
		b.mu.Lock()
		b.errs[name] = err
		b.mu.Unlock()
	})
	synctest.Wait()
}

// arriveInOrder starts the waiters one after another, 100ms apart, each
// with the options o returns (nil: the bed's defaults).
func (b *queueBed) arriveInOrder(all []string, o func() *lease.Options) {
	for _, n := range all {
		var opts *lease.Options
		if o != nil {
			opts = o()
		}
		b.arrive(n, opts)
		time.Sleep(100 * time.Millisecond)
	}
}

// releaseAndTimeFirst releases the first holder's lease and returns how
// long the first waiter took to acquire it.
func (b *queueBed) releaseAndTimeFirst() time.Duration {
	b.holder.Release(b.t.Context())
	released := time.Now()
	for len(b.got()) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(released)
}

func (b *queueBed) queue() []string {
	q, err := lease.InspectQueue(b.t.Context(), b.s, "locks/job")
	if err != nil {
		b.t.Fatal(err)
	}
	var names []string
	for _, t := range q.Tickets {
		names = append(names, t.Holder)
	}
	return names
}

func (b *queueBed) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.order)
}

func names(n int) []string {
	var r []string
	for i := range n {
		r = append(r, fmt.Sprintf("w%02d", i))
	}
	return r
}

// TestQueueServesInArrivalOrder: waiters in separate Lockers (processes)
// get the lease in the order they arrived, although the later ones would
// have read the release as early as the first.
func TestQueueServesInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		want := names(8)
		for _, n := range want {
			b.arrive(n, nil)
			time.Sleep(100 * time.Millisecond)
		}
		if q := b.queue(); !slices.Equal(q, want) {
			t.Fatalf("queue = %v, want %v", q, want)
		}
		b.holder.Release(t.Context())
		b.wg.Wait()
		if got := b.got(); !slices.Equal(got, want) {
			t.Errorf("holders in order %v, want the arrival order %v", got, want)
		}
		if q := b.queue(); len(q) != 0 {
			t.Errorf("queue after everyone held the lease: %v, want empty", q)
		}
		if _, err := b.s.Get(t.Context(), lease.QueueKey("locks/job")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the emptied queue record is left behind (Get: %v); the last one out deletes it", err)
		}
	})
}

// TestQueueNoQueueIsFreeForAll: with NoQueue the same waiters are not
// served in order (the check that the ordering test can fail).
func TestQueueNoQueueIsFreeForAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		b.hold = 100 * time.Millisecond
		want := names(8)
		for _, n := range want {
			b.arrive(n, &lease.Options{NoQueue: true})
			time.Sleep(100 * time.Millisecond)
		}
		if q := b.queue(); len(q) != 0 {
			t.Fatalf("NoQueue waiters took tickets: %v", q)
		}
		b.holder.Release(t.Context())
		b.wg.Wait()
		if got := b.got(); slices.Equal(got, want) {
			t.Logf("NoQueue waiters happened to be served in arrival order %v", got)
		}
		if len(b.got()) != len(want) {
			t.Errorf("holders %v, want all of %v", b.got(), want)
		}
	})
}

// TestQueueDeadHeadIsSkipped: the head dies (its process killed: its
// ticket stays). The next waiter takes its place once the dead head's
// ticket has stayed unchanged for a TTL, and the order of the others holds.
func TestQueueDeadHeadIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		all := names(4)
		b.arriveInOrder(all, nil)
		b.skipDead(t, all, 1)
		if q := b.queue(); len(q) != 0 {
			t.Errorf("queue at the end: %v, want the dead head's ticket removed", q)
		}
	})
}

// TestQueueGiveUpLeaves: a waiter that gives up (its ctx ends) removes its
// ticket at once, and the next one is served right after the release.
func TestQueueGiveUpLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		all := names(3)
		for _, n := range all {
			b.arrive(n, nil)
		}
		b.cancel["w00"]()
		b.cancel["w01"]()
		time.Sleep(time.Second) // their removals may have raced: let the loser retry
		if q := b.queue(); !slices.Equal(q, all[2:]) {
			t.Fatalf("queue after two gave up: %v, want %v", q, all[2:])
		}
		took := b.releaseAndTimeFirst()
		poll := lease.Options{TTL: qttl}
		lk, _ := lease.NewLocker(b.s, "locks/job", &poll)
		if most := 2 * lk.Options().PollInterval; took > most {
			t.Errorf("the last waiter acquired %v after the release; want within %v (two polls)", took, most)
		}
		b.wg.Wait()
		if got := b.got(); !slices.Equal(got, all[2:]) {
			t.Errorf("holders %v, want %v", got, all[2:])
		}
	})
}

// TestQueueRequestBudget: while the lease is held, n queued waiters make
// at most PollBudget requests per second together, whatever n, where
// waiters without the queue make one per PollInterval each.
func TestQueueRequestBudget(t *testing.T) {
	const window = 20 * qttl
	measure := func(n int, o lease.Options) int64 {
		var total int64
		synctest.Test(t, func(t *testing.T) {
			b := newQueueBed(t)
			for _, name := range names(n) {
				o := o
				b.arrive(name, &o)
			}
			time.Sleep(qttl) // let arrivals settle
			start := map[string]int64{}
			for name, c := range b.conns {
				start[name] = c.n.Load()
			}
			time.Sleep(window)
			for name, c := range b.conns {
				total += c.n.Load() - start[name]
			}
			for _, cancel := range b.cancel {
				cancel()
			}
			b.wg.Wait()
			b.holder.Release(t.Context())
		})
		return total
	}
	budget := lease.DefaultPollBudget * window.Seconds()
	for _, n := range []int{1, 10, 50} {
		got := measure(n, lease.Options{})
		t.Logf("%d queued waiters: %d requests in %v (%.2f/s; budget %.0f)", n, got, window, float64(got)/window.Seconds(), budget)
		if float64(got) > budget {
			t.Errorf("%d queued waiters made %d requests in %v, over the budget of %.0f", n, got, window, budget)
		}
	}
	free := measure(50, lease.Options{NoQueue: true})
	t.Logf("50 waiters without the queue: %d requests in %v (%.2f/s)", free, window, float64(free)/window.Seconds())
	if float64(free) <= budget {
		t.Errorf("50 waiters without the queue made %d requests, within the budget: the measurement cannot tell", free)
	}
	low := measure(20, lease.Options{PollBudget: 6})
	t.Logf("20 queued waiters with PollBudget 6: %d requests in %v", low, window)
	if float64(low) > 6*window.Seconds() {
		t.Errorf("20 queued waiters with PollBudget 6 made %d requests in %v", low, window)
	}
}

// TestQueueNeverTwoHolders: queued waiters, waiters that ignore the queue
// (NoQueue), and a vandal that deletes or corrupts the queue record
// contend for one lease: never two holders at once, tokens strictly
// increase, and everyone is served.
func TestQueueNeverTwoHolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := leasetest.WithoutWatch(memstore.New()) // waiters poll as on an object store
		var active atomic.Int64
		var mu sync.Mutex
		var tokens []uint64
		var wg sync.WaitGroup
		ctx, stop := context.WithCancel(t.Context())
		for i := range 8 {
			o := &lease.Options{Holder: fmt.Sprint("c", i), TTL: qttl, NoQueue: i%4 == 3}
			lk, err := lease.NewLocker(s, "locks/job", o)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for r := 0; r < 5; r++ {
					err := lk.Run(t.Context(), func(ctx context.Context, l *lease.Lease) error {
						if n := active.Add(1); n != 1 {
							t.Errorf("%d holders at once", n)
						}
						mu.Lock()
						tokens = append(tokens, l.Token())
						mu.Unlock()
						time.Sleep(time.Duration(rand.N(2000)) * time.Millisecond)
						active.Add(-1)
						return nil
					})
					if err != nil {
						t.Errorf("Run: %v", err)
					}
				}
			})
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				time.Sleep(time.Duration(rand.N(5000)) * time.Millisecond)
				if rand.N(2) == 0 {
					s.Delete(ctx, lease.QueueKey("locks/job"), store.Unconditional)
				} else {
					s.Put(ctx, lease.QueueKey("locks/job"), []byte("not a queue"), store.Unconditional)
				}
			}
		})
		go func() {
			for len(tokensOf(&mu, &tokens)) < 40 {
				time.Sleep(time.Second)
			}
			stop()
		}()
		wg.Wait()
		got := tokensOf(&mu, &tokens)
		if len(got) != 40 {
			t.Errorf("%d holdings, want 40", len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("token %d after %d: tokens must strictly increase (%v)", got[i], got[i-1], got)
			}
		}
	})
}

func tokensOf(mu *sync.Mutex, tokens *[]uint64) []uint64 {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*tokens)
}

// TestQueueCrowdArrives: 100 waiters arrive at the same instant. Their
// queue writes race; each lost race costs a read and a write more, with
// backoff, and all of them take a place within a few TTLs.
func TestQueueCrowdArrives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		const n = 100
		c := &conn{Store: b.s}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for i := range n {
			lk, err := lease.NewLocker(c, "locks/job", &lease.Options{Holder: fmt.Sprint("w", i), TTL: qttl})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { lk.Acquire(ctx) })
		}
		deadline := time.Now().Add(3 * qttl)
		for len(b.queue()) < n && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		got, reqs := len(b.queue()), c.n.Load()
		t.Logf("%d of %d waiters queued after %v, %d requests (%.1f per waiter)", got, n, time.Since(deadline.Add(-3*qttl)), reqs, float64(reqs)/n)
		if got != n {
			t.Errorf("%d of %d waiters took a place within %v", got, n, 3*qttl)
		}
		if reqs > 40*n {
			t.Errorf("%d requests for %d arrivals, want at most %d", reqs, n, 40*n)
		}
		cancel()
		wg.Wait()
		b.holder.Release(t.Context())
	})
}

// TestQueueTwoDeadInARow: the head and the next in line both die. Both
// heartbeat, so both are found out in the same TTL, and the third waiter
// is served within a TTL of the release, not two.
func TestQueueTwoDeadInARow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		all := names(4)
		b.arriveInOrder(all, nil)
		time.Sleep(qttl) // everyone has looked at its place
		b.skipDead(t, all, 2)
	})
}

// skipDead kills the first dead of the waiters all (in their order of
// arrival), releases the lock half a TTL later, and checks that the first
// living waiter acquires it within a TTL and the living ones hold it in
// order.
func (b *queueBed) skipDead(t *testing.T, all []string, dead int) {
	t.Helper()
	for _, n := range all[:dead] {
		b.conns[n].killed.Store(true)
	}
	time.Sleep(qttl / 2)
	if took := b.releaseAndTimeFirst(); took > qttl {
		t.Errorf("the first living waiter acquired %v after the release, behind %d dead; want within a TTL (%v)", took, dead, qttl)
	}
	b.wg.Wait()
	if got, want := b.got(), all[dead:]; !slices.Equal(got, want) {
		t.Errorf("holders %v, want %v", got, want)
	}
}

// stalls returns the longest time between one holder's release and the
// next one's start.
func (b *queueBed) stalls() (longest time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 1; i < len(b.spans); i++ {
		longest = max(longest, b.spans[i][0].Sub(b.spans[i-1][1]))
	}
	return longest
}

// TestQueueDeadRunAtTheFront: the whole front of the line dies at once,
// one run of window tickets (three with a 15 s TTL at the default
// budget). Every ticket of the run heartbeats and is timed at once by the
// waiter behind it, so the run is cleared within one TTL of the release,
// not one TTL per one or two of them.
func TestQueueDeadRunAtTheFront(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		all := names(6)
		b.arriveInOrder(all, func() *lease.Options { return &lease.Options{TTL: runTTL} })
		time.Sleep(runTTL) // everyone has looked at its place
		for _, n := range all[:3] {
			b.conns[n].killed.Store(true)
		}
		if took := b.releaseAndTimeFirst(); took > runTTL {
			t.Errorf("the fourth waiter acquired %v after the release, behind three dead ones; want within a TTL (%v)", took, runTTL)
		}
		b.wg.Wait()
		if got, want := b.got(), all[3:]; !slices.Equal(got, want) {
			t.Errorf("holders %v, want %v", got, want)
		}
	})
}

// TestQueueDeadRunMovesUp: three waiters die deep in the line, where
// nobody times them. Each is timed from the moment it enters the window
// at the front, while the live waiters ahead of it are served, so when
// the run reaches the head the stall is at most one TTL (with holds of a
// few seconds, as the benchmark's: see ticketExpiry for the bound).
func TestQueueDeadRunMovesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueueBed(t)
		b.hold = 3 * time.Second
		all := names(10)
		b.arriveInOrder(all, func() *lease.Options { return &lease.Options{TTL: runTTL} })
		time.Sleep(runTTL)
		for _, n := range all[4:7] {
			b.conns[n].killed.Store(true)
		}
		b.holder.Release(t.Context())
		b.wg.Wait()
		want := slices.Concat(all[:4], all[7:])
		if got := b.got(); !slices.Equal(got, want) {
			t.Errorf("holders %v, want %v", got, want)
		}
		if s := b.stalls(); s > runTTL {
			t.Errorf("the longest stall between one holder and the next was %v, want at most a TTL (%v)", s, runTTL)
		}
	})
}
