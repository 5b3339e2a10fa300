package cas_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// increment is a Func that adds one to a decimal counter (absent = 0).
func increment(cur []byte, exists bool) (cas.Decision, error) {
	n := 0
	if exists {
		var err error
		if n, err = strconv.Atoi(string(cur)); err != nil {
			return cas.Decision{}, err
		}
	}
	return cas.Set([]byte(strconv.Itoa(n + 1))), nil
}

func get(t *testing.T, s store.Store, key string) (store.Entry, bool) {
	t.Helper()
	e, err := s.Get(context.Background(), key)
	if errors.Is(err, store.ErrNotFound) {
		return e, false
	}
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return e, true
}

func TestUpdateCreatesThenModifies(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	for want := 1; want <= 3; want++ {
		res, err := cas.Update(ctx, s, "counter", increment, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != cas.Written || !res.Exists || res.Attempts != 1 {
			t.Fatalf("result %+v, want Written, exists, 1 attempt", res)
		}
		e, _ := get(t, s, "counter")
		if string(e.Value) != strconv.Itoa(want) || e.Version != res.Entry.Version {
			t.Fatalf("stored %q@%s, result %q@%s, want %d at the result's version",
				e.Value, e.Version, res.Entry.Value, res.Entry.Version, want)
		}
	}
}

func TestUpdateDelete(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if _, err := s.Put(ctx, "k", []byte("v"), store.Unconditional); err != nil {
		t.Fatal(err)
	}
	del := func([]byte, bool) (cas.Decision, error) { return cas.Delete(), nil }
	res, err := cas.Update(ctx, s, "k", del, nil)
	if err != nil || res.Outcome != cas.Deleted || res.Exists {
		t.Fatalf("delete: %+v, %v; want Deleted", res, err)
	}
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("key still exists after Deleted")
	}
	// Deleting an absent key writes nothing and still reports Deleted.
	res, err = cas.Update(ctx, s, "k", del, nil)
	if err != nil || res.Outcome != cas.Deleted {
		t.Fatalf("delete of absent key: %+v, %v; want Deleted", res, err)
	}
}

func TestUpdateAbortWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	v, err := s.Put(ctx, "k", []byte("keep"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cas.Update(ctx, s, "k", func(cur []byte, exists bool) (cas.Decision, error) {
		return cas.Abort(), nil
	}, nil)
	if err != nil || res.Outcome != cas.Aborted || !res.Exists || res.Entry.Version != v || string(res.Entry.Value) != "keep" {
		t.Fatalf("abort: %+v, %v; want Aborted with the state seen", res, err)
	}
	if e, _ := get(t, s, "k"); e.Version != v {
		t.Fatalf("version changed from %s to %s after Abort", v, e.Version)
	}
}

func TestUpdateFuncErrorWritesNothing(t *testing.T) {
	s := memstore.New()
	boom := errors.New("boom")
	_, err := cas.Update(context.Background(), s, "k", func([]byte, bool) (cas.Decision, error) {
		return cas.Set([]byte("x")), boom
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the function's error", err)
	}
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("a failing function wrote the key")
	}
}

func TestUpdateZeroDecisionIsAnError(t *testing.T) {
	s := memstore.New()
	_, err := cas.Update(context.Background(), s, "k", func([]byte, bool) (cas.Decision, error) {
		return cas.Decision{}, nil
	}, nil)
	if err == nil {
		t.Fatal("zero Decision accepted")
	}
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("zero Decision wrote the key")
	}
}

func TestUpdateRejectsNegativeOptions(t *testing.T) {
	for field, o := range map[string]cas.Options{
		"MaxAttempts": {MaxAttempts: -1}, "TransientBudget": {TransientBudget: -1}, "BaseDelay": {BaseDelay: -1},
		"MaxDelay": {MaxDelay: -1}, "Timeout": {Timeout: -1},
	} {
		_, err := cas.Update(context.Background(), memstore.New(), "k", increment, &o)
		if err == nil {
			t.Errorf("options %+v accepted", o)
		} else if want := `cas: update "k": negative Options.` + field; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("options %+v: error %q, want it to start %q", o, err, want)
		}
	}
}

func TestUpdateInvalidKeyFailsAtOnce(t *testing.T) {
	calls := 0
	_, err := cas.Update(context.Background(), memstore.New(), "../x", func([]byte, bool) (cas.Decision, error) {
		calls++
		return cas.Set(nil), nil
	}, nil)
	if !errors.Is(err, store.ErrInvalidKey) || calls != 0 {
		t.Fatalf("err = %v after %d calls, want ErrInvalidKey before any call", err, calls)
	}
}

// TestUpdateConcurrentIncrements: N goroutines increment one counter M
// times each; no update may be lost.
func TestUpdateConcurrentIncrements(t *testing.T) {
	const workers, each = 16, 50
	s := memstore.New()
	opts := &cas.Options{MaxAttempts: 1000, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := cas.Update(context.Background(), s, "counter", increment, opts); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e, _ := get(t, s, "counter")
	if got := string(e.Value); got != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s, want %d", got, workers*each)
	}
}

// interfere returns a Func that, like another writer, overwrites the key
// after reading it, so every write of Update loses its race.
func interfere(s store.Store, calls *int) cas.Func {
	return func(cur []byte, exists bool) (cas.Decision, error) {
		*calls++
		if _, err := s.Put(context.Background(), "k", []byte(fmt.Sprint("other ", *calls)), store.Unconditional); err != nil {
			return cas.Decision{}, err
		}
		return cas.Set([]byte("mine")), nil
	}
}

func TestUpdateGivesUpWhenContended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		calls := 0
		opts := &cas.Options{MaxAttempts: 7, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}
		start := time.Now()
		res, err := cas.Update(context.Background(), s, "k", interfere(s, &calls), opts)
		var ce *cas.ContendedError
		if !errors.Is(err, cas.ErrContended) || !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a *ContendedError", err)
		}
		if ce.Attempts != 7 || calls != 7 || res.Attempts != 7 || ce.Deadline || ce.Key != "k" {
			t.Fatalf("error %+v after %d calls (result %d), want 7 attempts, not deadline", ce, calls, res.Attempts)
		}
		// Six backoffs, each under its ceiling: 10+20+40+40+40+40 ms.
		if el := time.Since(start); el >= 190*time.Millisecond {
			t.Fatalf("slept %v, more than the sum of the backoff ceilings", el)
		}
		if e, _ := get(t, s, "k"); string(e.Value) == "mine" {
			t.Fatal("a contended update wrote its value")
		}
	})
}

func TestUpdateTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		calls := 0
		opts := &cas.Options{MaxAttempts: 1 << 20, BaseDelay: 10 * time.Millisecond, MaxDelay: 10 * time.Millisecond, Timeout: 100 * time.Millisecond}
		start := time.Now()
		_, err := cas.Update(context.Background(), s, "k", interfere(s, &calls), opts)
		var ce *cas.ContendedError
		if !errors.As(err, &ce) || !ce.Deadline {
			t.Fatalf("err = %v, want a *ContendedError with Deadline", err)
		}
		if el := time.Since(start); el >= 100*time.Millisecond {
			t.Fatalf("ran %v, past the 100ms timeout", el)
		}
		if calls < 10 || ce.Attempts != calls {
			t.Fatalf("%d calls, error says %d attempts; want at least 10 (100ms/10ms)", calls, ce.Attempts)
		}
	})
}

func TestUpdateStopsWhenContextIsCancelledDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		opts := &cas.Options{MaxAttempts: 1 << 20, BaseDelay: time.Hour, MaxDelay: time.Hour}
		time.AfterFunc(time.Minute, cancel)
		start := time.Now()
		_, err := cas.Update(ctx, s, "k", interfere(s, &calls), opts)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		// The first backoff is drawn from [0, 1h): either it ended before
		// the cancel (then the second one was interrupted) or the cancel
		// interrupted it. Either way Update returned at the cancel.
		if el := time.Since(start); el != time.Minute {
			t.Fatalf("returned after %v, want exactly at the cancel (1m)", el)
		}
	})
}

func TestUpdateChecksContextBeforeWriting(t *testing.T) {
	s := memstore.New()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := cas.Update(ctx, s, "k", func([]byte, bool) (cas.Decision, error) {
		cancel()
		return cas.Set([]byte("late")), nil
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("wrote after the context was cancelled")
	}
}

// noCAS hides memstore's compare-and-swap capability.
type noCAS struct{ *memstore.Store }

func (noCAS) Capabilities() store.Capabilities { return store.Capabilities{CreateIfAbsent: true} }

func TestUpdateRequiresCompareAndSwap(t *testing.T) {
	_, err := cas.Update(context.Background(), noCAS{memstore.New()}, "k", increment, nil)
	if !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

// recorder logs the versions Update reads of the key k and the
// conditions it writes k with (not its waiting line); it changes nothing.
type recorder struct {
	store.Store
	log []string
}

func (r *recorder) Get(ctx context.Context, key string) (store.Entry, error) {
	e, err := r.Store.Get(ctx, key)
	if key == "k" {
		r.log = append(r.log, "read "+string(e.Version))
	}
	return e, err
}

func (r *recorder) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if key == "k" {
		r.log = append(r.log, "write "+cond.String())
	}
	return r.Store.Put(ctx, key, value, cond)
}

// After every lost race Update reads again and writes on the fresh
// version: never twice on the same, never on a stale one.
func TestUpdateNeverWritesOnAStaleVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New()
		r := &recorder{Store: mem}
		var theirs []store.Version // the versions the other writer wrote, in order
		_, err := cas.Update(context.Background(), r, "k", func([]byte, bool) (cas.Decision, error) {
			v, err := mem.Put(context.Background(), "k", []byte(fmt.Sprint("other ", len(theirs))), store.Unconditional)
			theirs = append(theirs, v)
			return cas.Set([]byte("mine")), err
		}, &cas.Options{MaxAttempts: 4})
		if !errors.Is(err, cas.ErrContended) {
			t.Fatalf("err = %v, want contended", err)
		}
		want := []string{"read ", "write if-absent"}
		for _, v := range theirs[:3] {
			want = append(want, fmt.Sprintf("read %s", v), fmt.Sprintf("write if-match %q", v))
		}
		if fmt.Sprint(r.log) != fmt.Sprint(want) {
			t.Fatalf("operations\n %q\nwant\n %q", r.log, want)
		}
	})
}

func TestContendedErrorMessage(t *testing.T) {
	err := error(&cas.ContendedError{Key: "jobs/a", Attempts: 7})
	if got := err.Error(); got != `cas: update "jobs/a": too contended after 7 attempts` {
		t.Fatalf("message %q", got)
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", err), cas.ErrContended) {
		t.Fatal("a wrapped *ContendedError does not match ErrContended")
	}
}
