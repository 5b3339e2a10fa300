package cas

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/clocktest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// stepClock makes cas read c for the rest of the test. The test must not
// be parallel (now is the package's clock).
func stepClock(t *testing.T) *clocktest.Clock {
	c := &clocktest.Clock{}
	now = c.Now
	t.Cleanup(func() { now = time.Now })
	return c
}

// holdTurnReal is holdTurn on the real clock: it returns once an Update
// of key holds the key's turn, and release lets it finish.
func holdTurnReal(t *testing.T, s store.Store, key string) (release func()) {
	hold, held, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	first := true
	go func() {
		defer close(done)
		_, err := Update(context.Background(), s, key, func(cur []byte, exists bool) (Decision, error) {
			if first {
				first = false
				close(held)
				<-hold
			}
			return add(cur, exists)
		}, nil)
		if err != nil {
			t.Error(err)
		}
	}()
	<-held
	return func() { close(hold); <-done }
}

// A step of the wall clock, backwards or forwards by an hour, while one
// Update holds a key's turn, changes nothing for the Update waiting
// behind it: it waits MaxDelay, no less and no more, and then goes
// ahead. (Before turns measured on the monotonic clock, a step back
// made the waiter wait MaxDelay plus the hour.)
func TestTurnWaitIgnoresWallClockSteps(t *testing.T) {
	const maxDelay = 100 * time.Millisecond
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			clk := stepClock(t)
			s := memstore.New()
			release := holdTurnReal(t, s, "step/k")
			defer release()
			clk.Step(step)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			_, err := Update(ctx, s, "step/k", add, &Options{MaxDelay: maxDelay})
			el := time.Since(start)
			if err != nil {
				t.Fatalf("the Update behind a held turn, after a wall-clock step of %v: %v (after %v)", step, err, el)
			}
			if el < maxDelay || el > maxDelay+time.Second {
				t.Errorf("it waited %v for the turn, want MaxDelay (%v) and a read and a write", el, maxDelay)
			}
		})
	}
}

// A step of the wall clock after an Update started moves neither its
// Timeout (while it waits for a turn, and while it backs off after
// transient failures) nor the contention memory's expiry.
func TestTimeoutsIgnoreWallClockSteps(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		t.Run("turn/"+step.String(), func(t *testing.T) {
			clk := stepClock(t)
			s := memstore.New()
			release := holdTurnReal(t, s, "step/k")
			defer release()
			go func() {
				time.Sleep(timeout / 4)
				clk.Step(step)
			}()
			start := time.Now()
			_, err := Update(context.Background(), s, "step/k", add, &Options{MaxDelay: 10 * time.Second, Timeout: timeout})
			el := time.Since(start)
			var ce *ContendedError
			if !errors.As(err, &ce) || !ce.Deadline {
				t.Fatalf("err = %v, want a ContendedError with Deadline", err)
			}
			if el < timeout || el > timeout+time.Second {
				t.Errorf("gave up waiting for the turn after %v, want the %v Timeout", el, timeout)
			}
		})
		t.Run("transient/"+step.String(), func(t *testing.T) {
			clk := stepClock(t)
			s := &stepOnGet{Store: memstore.New(), step: func() { clk.Step(step) }}
			start := time.Now()
			_, err := Update(context.Background(), s, "step/t", add, &Options{MaxDelay: 10 * time.Millisecond, Timeout: timeout})
			el := time.Since(start)
			if !errors.Is(err, store.ErrTransient) {
				t.Fatalf("err = %v, want the transient failures ended by the timeout", err)
			}
			if el < timeout-50*time.Millisecond || el > timeout+time.Second {
				t.Errorf("gave up after %v, want the %v Timeout", el, timeout)
			}
		})
	}
	t.Run("memory", func(t *testing.T) {
		clk := stepClock(t)
		s := memstore.New()
		remember(s, "step/m", 40*time.Millisecond, now())
		for _, step := range []time.Duration{-time.Hour, 2 * time.Hour} {
			clk.Step(step)
			if c := recalled(s, "step/m", now()); c != 40*time.Millisecond {
				t.Errorf("after a wall-clock step of %v the memory recalls %v, want 40ms (it is a second old at most)", step, c)
			}
		}
		clk.Advance(memoryTTL + time.Millisecond)
		if c := recalled(s, "step/m", now()); c != 0 {
			t.Errorf("the memory recalls %v after its TTL, want nothing", c)
		}
	})
}

// stepOnGet fails every Get with store.ErrTransient, calling step before
// the first.
type stepOnGet struct {
	store.Store
	step  func()
	calls int
}

func (s *stepOnGet) Get(ctx context.Context, key string) (store.Entry, error) {
	if s.calls++; s.calls == 1 {
		s.step()
	}
	return store.Entry{}, store.ErrTransient
}

// A step of the wall clock, backwards or forwards by an hour, while an
// Update waits behind tickets whose processes died, changes nothing: the
// tickets are passed after their TTL on the monotonic clock, no sooner
// (a step forward does not expire them) and not an hour later.
func TestDeadTicketsPassWhateverTheWallClock(t *testing.T) {
	const maxDelay = 25 * time.Millisecond
	ttl := lineTicketTTL * maxDelay
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			clk := stepClock(t)
			mem := memstore.New()
			for i := range lineWindow {
				k := LinePrefix("k") + "0000000000000000000" + string(rune('1'+i)) + "-dead"
				if _, err := mem.Put(context.Background(), k, []byte("{}"), store.IfAbsent); err != nil {
					t.Fatal(err)
				}
			}
			time.AfterFunc(ttl/2, func() { clk.Step(step) })
			ctx, cancel := context.WithTimeout(context.Background(), ttl+2*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := Update(ctx, &racing{Store: mem, n: lineAfter}, "k", add, &Options{MaxDelay: maxDelay}); err != nil {
				t.Fatalf("after a step of %v: %v", step, err)
			}
			if el := time.Since(start); el < ttl || el > ttl+time.Second {
				t.Fatalf("after a step of %v the Update behind dead tickets took %v, want their TTL (%v) and little more", step, el, ttl)
			}
		})
	}
}
