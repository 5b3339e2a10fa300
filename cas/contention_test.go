package cas

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

const ms = time.Millisecond

func TestFirstCeilingIsTheLargestStartUnderTheCap(t *testing.T) {
	o := Options{BaseDelay: 2 * ms, MaxDelay: 100 * ms}
	cases := []struct{ attempt, recall, want time.Duration }{
		{0, 0, 2 * ms},               // nothing known: BaseDelay
		{ms, 0, 2 * ms},              // a fast store: still BaseDelay
		{7 * ms, 0, 7 * ms},          // one round trip of a slow store
		{7 * ms, 30 * ms, 30 * ms},   // remembered contention
		{300 * ms, 0, 100 * ms},      // capped
		{0, time.Hour, 100 * ms},     // a memory from a caller with a larger cap
		{40 * ms, 10 * ms, 40 * ms},  // the round trip wins over a smaller memory
		{2 * ms, 2*ms + 1, 2*ms + 1}, // strictly the largest
		{-time.Second, -ms, 2 * ms},  // nonsense never goes under BaseDelay
		{100*ms + 1, 100*ms + 1, 100 * ms},
	}
	for _, c := range cases {
		if got := firstCeiling(o, c.attempt, c.recall); got != c.want {
			t.Errorf("firstCeiling(attempt %v, recall %v) = %v, want %v", c.attempt, c.recall, got, c.want)
		}
	}
}

func TestContentionMemoryMatchesStoreAndKeyAndExpires(t *testing.T) {
	a, b := memstore.New(), memstore.New()
	now := time.Now()
	remember(a, "mem/k", 40*ms, now)
	if got := recalled(a, "mem/k", now); got != 40*ms {
		t.Fatalf("recalled = %v, want 40ms", got)
	}
	if got := recalled(b, "mem/k", now); got != 0 {
		t.Errorf("another store recalled %v, want nothing", got)
	}
	if got := recalled(a, "mem/other", now); got != 0 {
		t.Errorf("another key recalled %v, want nothing", got)
	}
	if got := recalled(a, "mem/k", now.Add(-time.Second)); got != 0 {
		t.Errorf("recalled %v before it was recorded, want nothing", got)
	}
	if got := recalled(a, "mem/k", now.Add(memoryTTL)); got != 40*ms {
		t.Errorf("recalled %v at the end of its life, want 40ms", got)
	}
	if got := recalled(a, "mem/k", now.Add(memoryTTL+1)); got != 0 {
		t.Errorf("recalled %v after it expired, want nothing", got)
	}
	if memorySlot("mem/k").Load() != nil {
		t.Error("an expired entry still holds its store")
	}
	// A wide ceiling outlives the TTL: four of its own sleeps.
	remember(a, "mem/k", time.Second, now)
	if got := recalled(a, "mem/k", now.Add(4*time.Second)); got != time.Second {
		t.Errorf("recalled %v four ceilings later, want 1s", got)
	}
	remember(b, "mem/k", 0, now) // forgetting another store's entry: a no-op
	if got := recalled(a, "mem/k", now); got != time.Second {
		t.Errorf("recalled %v after another store forgot, want 1s", got)
	}
	remember(a, "mem/k", 0, now)
	if got := recalled(a, "mem/k", now); got != 0 || memorySlot("mem/k").Load() != nil {
		t.Errorf("recalled %v after forgetting, want nothing", got)
	}
}

// uncomparable is a store whose dynamic type cannot be compared with ==.
type uncomparable struct {
	store.Store
	_ []int
}

func TestUncomparableStoreHasNoMemory(t *testing.T) {
	if !remembers(memstore.New()) {
		t.Error("a *memstore.Store gets no memory")
	}
	u := uncomparable{Store: memstore.New()}
	if remembers(u) {
		t.Error("an uncomparable store value would be compared with ==")
	}
	now := time.Now()
	remember(u, "mem/u", 40*ms, now) // a no-op, not a panic
	if got := recalled(u, "mem/u", now); got != 0 {
		t.Errorf("an uncomparable store recalled %v", got)
	}
	remember(memstore.New(), "mem/u", 40*ms, now)
	if got := recalled(u, "mem/u", now); got != 0 { // == on different types: false, no panic
		t.Errorf("an uncomparable store recalled another store's %v", got)
	}
}

// racing is a store where another writer wins the first n writes of k
// (it writes just before each of them), and every Put takes put (a slow
// round trip).
type racing struct {
	store.Store
	n   int
	put time.Duration
}

func (r *racing) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	time.Sleep(r.put)
	if r.n > 0 && key == "k" {
		r.n--
		if _, err := r.Store.Put(ctx, key, []byte(fmt.Sprint("other ", r.n)), store.Unconditional); err != nil {
			return "", err
		}
	}
	return r.Store.Put(ctx, key, v, c)
}

func setX(cur []byte, exists bool) (Decision, error) { return Set([]byte("x")), nil }

func TestUpdateStartsItsBackoffWhereTheLastOneEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &racing{Store: memstore.New()}
		opts := &Options{BaseDelay: 10 * ms, MaxDelay: time.Second}
		update := func(conflicts int) Result {
			t.Helper()
			s.n = conflicts
			res, err := Update(context.Background(), s, "k", setX, opts)
			if err != nil || res.Attempts != conflicts+1 {
				t.Fatalf("Update = %+v, %v; want Written after %d conflicts", res, err, conflicts)
			}
			return res
		}
		// Four lost races from BaseDelay: ceilings 10, 20, 40, 80ms; the
		// memory is half the last, 40ms.
		update(4)
		if got := recalled(s, "k", time.Now()); got != 40*ms {
			t.Fatalf("after 4 conflicts the memory is %v, want 40ms", got)
		}
		// One lost race starts at 40ms, not at BaseDelay (which would
		// have left 5ms, under BaseDelay: nothing).
		update(1)
		if got := recalled(s, "k", time.Now()); got != 20*ms {
			t.Fatalf("after 1 conflict from 40ms the memory is %v, want 20ms", got)
		}
		// An uncontended Update does not wait, and leaves the memory as
		// it is (right after a win, a writer often wins again at once
		// however many others wait).
		start := time.Now()
		update(0)
		if el := time.Since(start); el != 0 {
			t.Errorf("an uncontended Update took %v with a memory, want no wait", el)
		}
		if got := recalled(s, "k", time.Now()); got != 20*ms {
			t.Fatalf("after an uncontended Update the memory is %v, want 20ms as before", got)
		}
		// A win at the first retry from 20ms leaves 10ms: BaseDelay,
		// where the backoff starts anyway: forgotten.
		update(1)
		if got := recalled(s, "k", time.Now()); got != 0 {
			t.Fatalf("after 1 conflict from 20ms the memory is %v, want nothing", got)
		}
		// The memory expires: 40ms left behind, then a second of quiet.
		update(4)
		time.Sleep(memoryTTL + ms)
		update(1) // starts at BaseDelay again: leaves 5ms, nothing
		if got := recalled(s, "k", time.Now()); got != 0 {
			t.Fatalf("after an expired memory the memory is %v, want nothing", got)
		}
	})
}

func TestUpdateBacksOffAtLeastOneRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every write takes 50ms: the first retry's ceiling is 50ms,
		// not the 2ms BaseDelay, and the memory left is 25ms.
		s := &racing{Store: memstore.New(), n: 1, put: 50 * ms}
		res, err := Update(context.Background(), s, "k", setX, &Options{BaseDelay: 2 * ms})
		if err != nil || res.Attempts != 2 {
			t.Fatalf("Update = %+v, %v; want Written at the second attempt", res, err)
		}
		if got := recalled(s, "k", time.Now()); got != 25*ms {
			t.Fatalf("the memory is %v, want half the 50ms round trip", got)
		}
	})
}
