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
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// faulty returns a faultstore over a memstore whose "k" holds "41".
func faulty(t *testing.T) (*faultstore.Store, store.Version) {
	t.Helper()
	mem := memstore.New()
	v, err := mem.Put(context.Background(), "k", []byte("41"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	return faultstore.New(mem, 1), v
}

func wantValue(t *testing.T, s store.Store, want string) store.Entry {
	t.Helper()
	e, err := s.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value) != want {
		t.Fatalf("k = %q, want %q", e.Value, want)
	}
	return e
}

func TestTransientFailuresAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.FailNext(faultstore.OpGet|faultstore.OpPut, 4, faultstore.FailBefore)
		res, err := cas.Update(context.Background(), fs, "k", increment, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fs.Injected() != 4 || res.Attempts != 1 {
			t.Fatalf("%d faults, %d attempts; want 4 faults absorbed in 1 attempt", fs.Injected(), res.Attempts)
		}
		if e := wantValue(t, fs, "42"); e.Version != res.Entry.Version {
			t.Fatalf("result version %s, stored %s", res.Entry.Version, e.Version)
		}
	})
}

func TestTransientBudgetRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpPut})
		start := time.Now()
		_, err := cas.Update(context.Background(), fs, "k", increment, &cas.Options{TransientBudget: time.Second, MaxDelay: 100 * time.Millisecond})
		if !errors.Is(err, store.ErrTransient) || errors.Is(err, cas.ErrContended) {
			t.Fatalf("err = %v, want the transient error, not contended", err)
		}
		if el := time.Since(start); el > time.Second || el < 900*time.Millisecond {
			t.Fatalf("gave up after %v, want within one backoff (100ms) of the 1s TransientBudget", el)
		}
		if fs.Injected() < 10 {
			t.Fatalf("%d puts tried in 1s with backoffs under 100ms, want at least 10", fs.Injected())
		}
		wantValue(t, fs, "41")
	})
}

// Conflicts and transient failures are counted separately: neither budget
// is spent by the other.
func TestConflictAndTransientBudgetsAreSeparate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: "k", Err: store.ErrConflict, Count: 3})
		fs.Inject(faultstore.Rule{Ops: faultstore.OpGet, Prefix: "k", Count: 4})
		res, err := cas.Update(context.Background(), fs, "k", increment, &cas.Options{MaxAttempts: 4})
		if err != nil {
			t.Fatal(err)
		}
		if res.Attempts != 4 || fs.Injected() != 7 {
			t.Fatalf("%d attempts, %d faults; want 4 attempts (3 conflicts) and 7 faults", res.Attempts, fs.Injected())
		}
		wantValue(t, fs, "42")
	})
}

func TestUnknownOutcomeNotAppliedIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.FailBefore, Err: store.ErrUnknownOutcome, Count: 2})
		res, err := cas.Update(context.Background(), fs, "k", increment, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != cas.Written || res.Attempts != 1 {
			t.Fatalf("result %+v, want Written after 1 attempt", res)
		}
		wantValue(t, fs, "42")
	})
}

func TestUnknownOutcomeAppliedWithUniqueValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)
		res, err := cas.Update(context.Background(), fs, "k", increment, &cas.Options{UniqueValues: true})
		if err != nil {
			t.Fatal(err)
		}
		// Applied exactly once, and the result names the stored version.
		if e := wantValue(t, fs, "42"); res.Outcome != cas.Written || e.Version != res.Entry.Version {
			t.Fatalf("result %+v, stored version %s", res, e.Version)
		}
	})
}

func TestUnknownOutcomeAppliedIsReturnedWithoutUniqueValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)
		res, err := cas.Update(context.Background(), fs, "k", increment, nil)
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want ErrUnknownOutcome", err)
		}
		// The write did land; Update neither claimed it nor applied it twice.
		wantValue(t, fs, "42")
		if !res.Exists || string(res.Entry.Value) != "42" {
			t.Fatalf("result %+v, want the state re-read", res)
		}
	})
}

func TestUnknownOutcomeDelete(t *testing.T) {
	del := func([]byte, bool) (cas.Decision, error) { return cas.Delete(), nil }
	t.Run("not applied is retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs, _ := faulty(t)
			fs.Inject(faultstore.Rule{Ops: faultstore.OpDelete, Err: store.ErrUnknownOutcome, Count: 1})
			res, err := cas.Update(context.Background(), fs, "k", del, nil)
			if err != nil || res.Outcome != cas.Deleted {
				t.Fatalf("%+v, %v; want Deleted", res, err)
			}
			if _, err := fs.Get(context.Background(), "k"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("get after delete: %v", err)
			}
		})
	})
	t.Run("applied is returned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs, _ := faulty(t)
			fs.FailNext(faultstore.OpDelete, 1, faultstore.ApplyThenFail)
			_, err := cas.Update(context.Background(), fs, "k", del, &cas.Options{UniqueValues: true})
			if !errors.Is(err, store.ErrUnknownOutcome) {
				t.Fatalf("err = %v, want ErrUnknownOutcome (an absent key proves nothing)", err)
			}
		})
	})
}

// hammer runs workers×each concurrent Updates of "counter" with fn(w)
// and returns how many succeeded and how many ended in an unknown outcome;
// any other error fails the test.
func hammer(t *testing.T, s store.Store, fn func(worker int) cas.Func, opts *cas.Options) (ok, unknown int) {
	t.Helper()
	const workers, each = 8, 25
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				_, err := cas.Update(context.Background(), s, "counter", fn(w), opts)
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, store.ErrUnknownOutcome):
					unknown++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, unknown
}

func counter(t *testing.T, fs *faultstore.Store) int {
	t.Helper()
	e, err := fs.Inner().Get(context.Background(), "counter")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.SplitN(string(e.Value), " ", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var hammerOpts = &cas.Options{MaxAttempts: 1000, TransientBudget: time.Hour, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond}

// Under random transient failures and unknown outcomes that were not
// applied, concurrent increments lose nothing and apply nothing twice: the
// counter equals the number of successful Updates exactly. (An unknown
// outcome with a changed key cannot be resolved and is returned.)
func TestConcurrentIncrementsUnderFaults(t *testing.T) {
	fs := faultstore.New(memstore.New(), 7)
	fs.Inject(faultstore.Rule{Ops: faultstore.OpGet | faultstore.OpPut, Prob: 0.1})
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Err: store.ErrUnknownOutcome, Prob: 0.05})
	ok, unknown := hammer(t, fs, func(int) cas.Func { return increment }, hammerOpts)
	if got := counter(t, fs); got != ok || ok == 0 {
		t.Fatalf("counter = %d, want %d (successes; %d unknown, %d faults)", got, ok, unknown, fs.Injected())
	}
}

// With values that name their writer (UniqueValues), an applied write of
// unknown outcome is recognised whenever the key still holds it. Every
// success is counted once, and no unknown outcome is counted as a success:
// successes <= counter <= successes + unknowns (an injected unknown may
// hide a write that conflicted), and some unknowns resolve.
func TestConcurrentIncrementsUniqueValuesUnderAppliedUnknowns(t *testing.T) {
	fs := faultstore.New(memstore.New(), 8)
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.ApplyThenFail, Prob: 0.1})
	seq := 0
	var mu sync.Mutex
	tagged := func(w int) cas.Func {
		return func(cur []byte, exists bool) (cas.Decision, error) {
			n := 0
			if exists {
				var err error
				if n, err = strconv.Atoi(strings.SplitN(string(cur), " ", 2)[0]); err != nil {
					return cas.Decision{}, err
				}
			}
			mu.Lock()
			seq++
			v := fmt.Sprintf("%d writer-%d-%d", n+1, w, seq)
			mu.Unlock()
			return cas.Set([]byte(v)), nil
		}
	}
	opts := *hammerOpts
	opts.UniqueValues = true
	ok, unknown := hammer(t, fs, tagged, &opts)
	if got := counter(t, fs); got < ok || got > ok+unknown || ok == 0 {
		t.Fatalf("counter = %d, want between %d successes and that + %d unknown (%d faults)", got, ok, unknown, fs.Injected())
	}
	if fs.Injected() == 0 || unknown >= fs.Injected() {
		t.Fatalf("%d unknown of %d injected: none resolved", unknown, fs.Injected())
	}
}

// The Timeout bounds retries of transient failures too, and the error
// says transient, not contended.
func TestTimeoutEndsTransientRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpGet})
		opts := &cas.Options{BaseDelay: 10 * time.Millisecond, MaxDelay: 10 * time.Millisecond, Timeout: 50 * time.Millisecond}
		start := time.Now()
		_, err := cas.Update(context.Background(), fs, "k", increment, opts)
		if !errors.Is(err, store.ErrTransient) || errors.Is(err, cas.ErrContended) || !strings.Contains(err.Error(), "Options.Timeout") {
			t.Fatalf("err = %v, want a transient error ended by the timeout", err)
		}
		if el := time.Since(start); el >= 50*time.Millisecond || fs.Injected() < 5 {
			t.Fatalf("ran %v with %d reads; want under the 50ms timeout and at least 5 reads", el, fs.Injected())
		}
	})
}
