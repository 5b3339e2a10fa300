package cas

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// slow is a store whose every read and write takes d, a round trip, so
// that concurrent Updates overlap.
type slow struct {
	store.Store
	d time.Duration
}

func (s *slow) Get(ctx context.Context, key string) (store.Entry, error) {
	time.Sleep(s.d)
	return s.Store.Get(ctx, key)
}

func (s *slow) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	time.Sleep(s.d)
	return s.Store.Put(ctx, key, v, c)
}

func add(cur []byte, _ bool) (Decision, error) {
	n, _ := strconv.Atoi(string(cur))
	return Set([]byte(strconv.Itoa(n + 1))), nil
}

func turnsInUse() int {
	turnsMu.Lock()
	defer turnsMu.Unlock()
	return len(turns)
}

// holdTurn starts an Update of key through s whose function waits, and
// returns once it holds the key's turn; release lets it finish and waits
// for it (in a synctest bubble).
func holdTurn(s store.Store, key string) (release func()) {
	hold, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		Update(context.Background(), s, key, func(cur []byte, exists bool) (Decision, error) {
			<-hold
			return add(cur, exists)
		}, nil)
	}()
	synctest.Wait()
	return func() { close(hold); <-done }
}

// Updates of one key through one store, in one process, take turns: none
// loses a race to another, and the count is right.
func TestLocalUpdatesOfOneKeyTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slow{Store: memstore.New(), d: ms}
		const n = 16
		attempts := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := Update(context.Background(), s, "turn/k", add, nil)
				if err != nil {
					t.Error(err)
				}
				attempts[i] = res.Attempts
			})
		}
		wg.Wait()
		for i, a := range attempts {
			if a != 1 {
				t.Errorf("Update %d made %d attempts: it raced another Update of this process", i, a)
			}
		}
		if e, err := s.Get(context.Background(), "turn/k"); err != nil || string(e.Value) != strconv.Itoa(n) {
			t.Fatalf("counter = %q (%v), want %d", e.Value, err, n)
		}
		if k := turnsInUse(); k != 0 {
			t.Errorf("%d turns left in the map after every Update returned", k)
		}
	})
}

// Turns are per key and per store value: an Update of another key, or
// through another store, never waits for one in flight.
func TestTurnsAreOfOneKeyAndOneStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		s, other := &slow{Store: mem, d: ms}, &slow{Store: mem, d: ms}
		release := holdTurn(s, "turn/a")
		for _, c := range []struct {
			s   store.Store
			key string
		}{{s, "turn/b"}, {other, "turn/a"}} {
			start := time.Now()
			if _, err := Update(context.Background(), c.s, c.key, add, nil); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el != 2*ms {
				t.Errorf("Update of %s took %v, want one read and one write (2ms): it waited for a turn", c.key, el)
			}
		}
		release()
	})
}

// A turn held by a function that hangs is passed after MaxDelay: the
// others go on without it, as they would without turns, and the hung
// Update then loses its race and runs again.
func TestAStuckTurnIsPassedAfterMaxDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slow{Store: memstore.New(), d: ms}
		hold := make(chan struct{})
		calls := 0
		stuck := make(chan Result, 1)
		go func() {
			res, err := Update(context.Background(), s, "turn/k", func(cur []byte, exists bool) (Decision, error) {
				if calls++; calls == 1 {
					<-hold
				}
				return add(cur, exists)
			}, &Options{MaxDelay: 50 * ms})
			if err != nil {
				t.Error(err)
			}
			stuck <- res
		}()
		synctest.Wait()
		start := time.Now()
		if _, err := Update(context.Background(), s, "turn/k", add, &Options{MaxDelay: 50 * ms}); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 52*ms {
			t.Errorf("the Update behind a stuck turn took %v, want MaxDelay and a read and a write (52ms)", el)
		}
		close(hold)
		if res := <-stuck; res.Attempts != 2 {
			t.Errorf("the stuck Update made %d attempts, want 2 (its first write lost to the one that passed it)", res.Attempts)
		}
		if e, _ := s.Get(context.Background(), "turn/k"); string(e.Value) != "2" {
			t.Errorf("counter = %q, want 2", e.Value)
		}
		if k := turnsInUse(); k != 0 {
			t.Errorf("%d turns left in the map", k)
		}
	})
}

// Waiting for a turn ends with ctx and with Timeout, before any attempt.
func TestWaitingForATurnEndsWithContextAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slow{Store: memstore.New(), d: ms}
		release := holdTurn(s, "turn/k")
		ctx, cancel := context.WithTimeout(context.Background(), 10*ms)
		defer cancel()
		res, err := Update(ctx, s, "turn/k", add, nil)
		if !errors.Is(err, context.DeadlineExceeded) || res.Attempts != 0 {
			t.Errorf("with ctx ending while it waits: %d attempts, err %v; want none and ctx's error", res.Attempts, err)
		}
		start := time.Now()
		res, err = Update(context.Background(), s, "turn/k", add, &Options{Timeout: 20 * ms, MaxDelay: time.Second})
		var ce *ContendedError
		if !errors.As(err, &ce) || !ce.Deadline || res.Attempts != 0 {
			t.Errorf("with Timeout passing while it waits: %d attempts, err %v; want none and a ContendedError with Deadline", res.Attempts, err)
		}
		if el := time.Since(start); el != 20*ms {
			t.Errorf("gave up after %v, want the 20ms Timeout", el)
		}
		release()
		if k := turnsInUse(); k != 0 {
			t.Errorf("%d turns left in the map", k)
		}
	})
}

// A function that panics gives the turn back.
func TestAPanickingFunctionGivesTheTurnBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slow{Store: memstore.New(), d: ms}
		func() {
			defer func() { _ = recover() }()
			Update(context.Background(), s, "turn/k", func([]byte, bool) (Decision, error) { panic("boom") }, nil)
		}()
		if k := turnsInUse(); k != 0 {
			t.Fatalf("%d turns left in the map after a panic", k)
		}
		start := time.Now()
		if _, err := Update(context.Background(), s, "turn/k", add, nil); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 2*ms {
			t.Errorf("the next Update took %v, want 2ms: the turn was not given back", el)
		}
	})
}
