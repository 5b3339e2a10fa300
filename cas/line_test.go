package cas

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// counting counts the requests sent through it, per operation.
type counting struct {
	store.Store
	gets, puts, dels, lists atomic.Int64
}

func (c *counting) Get(ctx context.Context, key string) (store.Entry, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counting) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	c.puts.Add(1)
	return c.Store.Put(ctx, key, v, cond)
}

func (c *counting) Delete(ctx context.Context, key string, cond store.Condition) error {
	c.dels.Add(1)
	return c.Store.Delete(ctx, key, cond)
}

func (c *counting) List(ctx context.Context, prefix string, o *store.ListOptions) (store.Page, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix, o)
}

func (c *counting) String() string {
	return fmt.Sprintf("%d gets, %d puts, %d deletes, %d lists", c.gets.Load(), c.puts.Load(), c.dels.Load(), c.lists.Load())
}

func lineOf(t *testing.T, s store.Store, key string) []string {
	t.Helper()
	page, err := s.List(context.Background(), LinePrefix(key), nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range page.Items {
		keys = append(keys, it.Key)
	}
	return keys
}

// wantNoTickets fails t unless the line of key is empty.
func wantNoTickets(t *testing.T, s store.Store, key string) {
	t.Helper()
	if l := lineOf(t, s, key); len(l) != 0 {
		t.Fatalf("tickets left in the line: %q", l)
	}
}

// plantTickets puts lineWindow tickets in the line of key, numbered from
// 1, as Updates of other processes (name) would have.
func plantTickets(t *testing.T, s store.Store, key, name string) {
	t.Helper()
	plantTicketsN(t, s, key, name, lineWindow)
}

// plantTicketsN is plantTickets with n tickets.
func plantTicketsN(t *testing.T, s store.Store, key, name string, n int) {
	t.Helper()
	for i := range n {
		k := fmt.Sprintf("%s%020d-%s%d", LinePrefix(key), i+1, name, i)
		if _, err := s.Put(context.Background(), k, []byte("{}"), store.IfAbsent); err != nil {
			t.Fatal(err)
		}
	}
}

// An Update that wins at once sends one read and one write, and nothing
// to the line, also on a key that was contended earlier (once the
// process's memory of its line has expired).
func TestAnUncontendedUpdateSendsOneReadAndOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		c := &counting{Store: &racing{Store: mem, n: lineAfter}}
		if _, err := Update(context.Background(), c, "k", add, nil); err != nil {
			t.Fatal(err)
		}
		if c.lists.Load() != 1 || c.dels.Load() != 1 {
			t.Fatalf("an Update that lost %d races sent %v; want it to take a ticket (a list and a create) and delete it", lineAfter, c)
		}
		time.Sleep(lineMemoryTTL)
		c = &counting{Store: c.Store}
		if _, err := Update(context.Background(), c, "k", add, nil); err != nil {
			t.Fatal(err)
		}
		if got := c.String(); got != "1 gets, 1 puts, 0 deletes, 0 lists" {
			t.Fatalf("an uncontended Update sent %s, want one read and one write", got)
		}
		wantNoTickets(t, mem, "k")
	})
}

// A process that left others in the line takes a ticket before its next
// Update's first attempt: the winner goes behind the losers.
func TestTheWinnerGoesBehindTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		s := &counting{Store: mem}
		plantTickets(t, mem, "k", "other") // of other processes, waiting
		sawLine(s, "k", time.Now(), 0)
		done := make(chan Result, 1)
		go func() {
			res, err := Update(context.Background(), s, "k", add, nil)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		synctest.Wait()
		select {
		case res := <-done:
			t.Fatalf("the Update went first (%+v), past tickets older than its own", res)
		default:
		}
		l := lineOf(t, mem, "k")
		if len(l) != lineWindow+1 || ticketSeq(LinePrefix("k"), l[lineWindow]) != lineWindow+1 {
			t.Fatalf("line %q, want the %d others and ours behind them (number %d)", l, lineWindow, lineWindow+1)
		}
		// The others are dead: after lineTicketTTL at the front they are
		// taken for gone and deleted.
		res := <-done
		if res.Outcome != Written {
			t.Fatalf("Update = %+v", res)
		}
		wantNoTickets(t, mem, "k")
	})
}

// Tickets whose processes died take a bounded time to pass: each waiter
// that has seen one at the front for lineTicketTTL MaxDelays stops
// counting it and deletes it; the window's other tickets race meanwhile.
func TestDeadTicketsAreSkippedAfterTheirTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, after := updateBehindDeadTickets(t, lineWindow, func(r *racing) store.Store { return r })
		if len(after) != 0 {
			t.Fatalf("tickets left in the line: %q", after)
		}
	})
}

// updateBehindDeadTickets plants n dead tickets in the line of "k" and
// runs an Update through wrap(a store whose first lineAfter writes of the
// key lose their race), which must take their TTL and at most one
// MaxDelay more. It returns the tickets planted and the line after.
func updateBehindDeadTickets(t *testing.T, n int, wrap func(*racing) store.Store) (dead, after []string) {
	t.Helper()
	mem := memstore.New()
	plantTicketsN(t, mem, "k", "dead", n)
	dead = lineOf(t, mem, "k")
	o := &Options{MaxDelay: 100 * ms}
	start := time.Now()
	res, err := Update(context.Background(), wrap(&racing{Store: mem, n: lineAfter}), "k", add, o)
	if err != nil || res.Outcome != Written {
		t.Fatalf("Update = %+v, %v", res, err)
	}
	ttl := lineTicketTTL * o.MaxDelay
	if el := time.Since(start); el < ttl || el > ttl+o.MaxDelay {
		t.Fatalf("behind %d dead tickets the Update took %v, want their TTL (%v) and at most one MaxDelay more", n, el, ttl)
	}
	return dead, lineOf(t, mem, "k")
}

// An Update leaves the line however it ends: here ctx ends, or
// Options.Timeout passes, while it waits behind others, listing the line
// on timers or watching it.
func TestAnUpdateLeavesTheLineWhenCancelled(t *testing.T) {
	const others = lineWindow + 2
	stores := map[string]func(*racing) store.Store{
		"timed":    func(r *racing) store.Store { return r },
		"watching": func(r *racing) store.Store { return watchable{r, r.Store.(store.Watcher)} },
	}
	for name, wrap := range stores {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memstore.New()
				plantTicketsN(t, mem, "k", "other", others)
				ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
				defer cancel()
				_, err := Update(ctx, wrap(&racing{Store: mem, n: lineAfter}), "k", add, nil)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want ctx's deadline", err)
				}
				_, err = Update(context.Background(), wrap(&racing{Store: mem, n: lineAfter}), "k", add, &Options{Timeout: 100 * ms})
				var ce *ContendedError
				if !errors.As(err, &ce) || !ce.Deadline {
					t.Fatalf("err = %v, want a ContendedError at Options.Timeout", err)
				}
				if l := lineOf(t, mem, "k"); len(l) != others {
					t.Fatalf("line %q after the Updates ended, want only the %d others", l, others)
				}
			})
		})
	}
}

// The line never decides a write: with every operation on it failing,
// contended Updates go on without it, and none is lost.
func TestUpdatesGoOnWithoutABrokenLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		fs := faultstore.New(mem, 1)
		fs.Inject(faultstore.Rule{Prefix: linePrefix})
		const procs, each = 8, 20
		done := make(chan error, procs)
		for range procs {
			p := &proc{Store: fs, rtt: ms, requests: &requests{}}
			go func() {
				for range each {
					if _, err := Update(context.Background(), p, "k", add, &Options{MaxAttempts: 1 << 10}); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		for range procs {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if fs.Injected() == 0 {
			t.Fatal("no Update tried the line")
		}
		if e, err := mem.Get(context.Background(), "k"); err != nil || string(e.Value) != fmt.Sprint(procs*each) {
			t.Fatalf("counter %q (%v), want %d", e.Value, err, procs*each)
		}
	})
}

// A ticket behind the window lists the line again when the line, moving
// one place per attempt, would have brought it to the window, or a
// little before: 80–100% of that time, at most lineTicketTTL MaxDelays.
// Each listing is a request served beside the updates; draws around
// three quarters of it (0.375–1.125), capped at one MaxDelay, made the
// waiters list the line 3.9 times per update on latchkey serve at 8
// clients and 10–13 times at 64.
func TestAWaiterListsTheLineWhenItShouldBeNearTheWindow(t *testing.T) {
	const attempt, maxDelay = 10 * ms, 250 * ms
	w := &waiting{}
	for _, ahead := range []int{1, 5, 20, 99} {
		i := lineWindow - 1 + ahead // ahead places to go to the window
		full := time.Duration(ahead) * attempt
		lo, hi := full*4/5, min(full, lineTicketTTL*maxDelay)
		for range 200 {
			if d := w.delay(i, attempt, maxDelay); d < min(lo, hi) || d > hi {
				t.Fatalf("%d places from the window: waits %v, want %v–%v", ahead, d, min(lo, hi), hi)
			}
		}
	}
}

// A process that keeps winning a key at once looks at its line at the
// 8th win, and after each look that found it empty twice as many wins
// later, up to one in 256: an uncontended loop of 1,000 Updates lists it
// 7 times (at 8, 24, 56, 120, 248, 504 and 760) and sends nothing else
// beyond its reads and writes.
func TestAnUncontendedLoopLooksAtTheLineLessAndLess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{Store: memstore.New()}
		for range 1000 {
			if _, err := Update(context.Background(), c, "loop/k", add, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(ms)
		}
		if got := c.String(); got != "1000 gets, 1000 puts, 0 deletes, 7 lists" {
			t.Fatalf("1,000 uncontended Updates sent %s, want 7 lists beside the reads and writes", got)
		}
	})
}

// watchable is a store wrapper (which hides the wrapped store's other
// methods) given the WaitChange of a store that can watch.
type watchable struct {
	store.Store
	store.Watcher
}

// On a store that can watch, a waiter behind the window waits on the
// ticket whose departure brings it there, and goes as soon as that
// ticket is deleted: the departures of the ones ahead of it wake nobody,
// and waiting costs no listing beyond the one that took the ticket.
func TestAWaiterWatchesTheTicketThatBringsItToTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		c := &counting{Store: mem}
		s := watchable{c, mem}
		const n = lineWindow + 2 // ahead of it: two places from the window
		plantTicketsN(t, mem, "k", "other", n)
		sawLine(s, "k", time.Now(), 0)
		done := make(chan error, 1)
		go func() {
			_, err := Update(context.Background(), s, "k", add, nil)
			done <- err
		}()
		l := lineOf(t, mem, "k")
		for i, k := range l[:n-lineWindow+1] {
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("the Update ended (%v) with %d tickets ahead of it", err, n-i)
			default:
			}
			time.Sleep(ms)
			if _, err := mem.Get(context.Background(), "k"); err == nil {
				t.Fatal("the Update wrote the key from behind the window")
			}
			if err := mem.Delete(context.Background(), k, store.Unconditional); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 0 {
			t.Errorf("the Update went %v after the ticket it watched was deleted, want at once", el)
		}
		if got := c.String(); got != "1 gets, 2 puts, 1 deletes, 1 lists" {
			t.Errorf("the Update sent %s, want a listing and a create for its ticket, a read and a write of the key, a delete of its ticket", got)
		}
		if l := lineOf(t, mem, "k"); len(l) != lineWindow-1 {
			t.Errorf("line %q, want the %d others of the window left", l, lineWindow-1)
		}
	})
}

// On a store that can watch, dead tickets ahead pass as they do without
// a watch: the watch on one lasts at most their TTL and the time the
// line would take to move, then the waiter lists the line and deletes
// those it has seen at the front for their TTL. Here five dead tickets
// are ahead; once the first three are deleted the Update is in the
// window (the two others stay, as without a watch, for the next
// contention to remove).
func TestDeadTicketsAreSkippedWhileWatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead, after := updateBehindDeadTickets(t, lineWindow+2, func(r *racing) store.Store { return watchable{r, r.Store.(store.Watcher)} })
		if !slices.Equal(after, dead[lineWindow:]) {
			t.Fatalf("line %q, want only the dead tickets behind the first %d: %q", after, lineWindow, dead[lineWindow:])
		}
	})
}
