package cas_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// lateLanding makes the next Put fail with ErrUnknownOutcome without
// reaching the store, and the Put after it apply and then fail with
// ErrConflict. That is what a caller sees when its first send lands late,
// after the re-read showed the key unchanged and just before the resend,
// which then loses its race to the first send: the same bytes, under the
// same condition, applied once.
func lateLanding(fs *faultstore.Store) {
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.FailBefore, Err: store.ErrUnknownOutcome, Count: 1})
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.ApplyThenFail, Err: store.ErrConflict, Count: 1})
}

// countingIncrement is increment counting its calls.
func countingIncrement(calls *int) cas.Func {
	return func(cur []byte, exists bool) (cas.Decision, error) {
		*calls++
		return increment(cur, exists)
	}
}

// After a write of unknown outcome, a conflict may be that write's own
// doing: Update must not run the Func again on a state that holds its
// change (41 + 1 must not become 43).
func TestLateLandingIsNotAppliedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		lateLanding(fs)
		calls := 0
		res, err := cas.Update(context.Background(), fs, "k", countingIncrement(&calls), nil)
		if !errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, store.ErrConflict) {
			t.Errorf("err = %v, want ErrUnknownOutcome (and not ErrConflict)", err)
		}
		if calls != 1 || res.Outcome == cas.Written {
			t.Errorf("%d calls of the function, result %+v; want 1 call and no claim of Written", calls, res)
		}
		wantValue(t, fs.Inner(), "42")
	})
}

// With UniqueValues the late write is recognised by its bytes after the
// conflict too, not only in the first re-read.
func TestLateLandingIsRecognisedWithUniqueValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		lateLanding(fs)
		calls := 0
		res, err := cas.Update(context.Background(), fs, "k", countingIncrement(&calls), &cas.Options{UniqueValues: true})
		if err != nil {
			t.Fatalf("err = %v, want Written", err)
		}
		e := wantValue(t, fs.Inner(), "42")
		if calls != 1 || res.Outcome != cas.Written || res.Entry.Version != e.Version {
			t.Fatalf("%d calls, result %+v, stored version %s; want 1 call, Written at the stored version", calls, res, e.Version)
		}
	})
}

// With MaxAttempts 1 the late landing must not be reported as a
// *ContendedError, which says nothing was written.
func TestLateLandingIsNotReportedContended(t *testing.T) {
	for _, unique := range []bool{false, true} {
		t.Run(fmt.Sprintf("UniqueValues=%v", unique), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs, _ := faulty(t)
				lateLanding(fs)
				res, err := cas.Update(context.Background(), fs, "k", increment, &cas.Options{MaxAttempts: 1, UniqueValues: unique})
				if errors.Is(err, cas.ErrContended) {
					t.Fatalf("UniqueValues %v: err = %v while the store holds the write", unique, err)
				}
				if unique && (err != nil || res.Outcome != cas.Written) {
					t.Fatalf("UniqueValues: %+v, %v; want Written", res, err)
				}
				if !unique && !errors.Is(err, store.ErrUnknownOutcome) {
					t.Fatalf("err = %v, want ErrUnknownOutcome", err)
				}
				wantValue(t, fs.Inner(), "42")
			})
		})
	}
}

// Once a write's outcome is unknown, running out of transient retries of
// its resend must not read as "nothing happened": the first send may
// still apply.
func TestTransientBudgetAfterUnknownOutcomeStaysUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := faulty(t)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.FailBefore, Err: store.ErrUnknownOutcome, Count: 1})
		fs.Inject(faultstore.Rule{Ops: faultstore.OpPut})
		_, err := cas.Update(context.Background(), fs, "k", increment, &cas.Options{TransientBudget: time.Second})
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want ErrUnknownOutcome", err)
		}
	})
}

// consumerDeletes applies the first create it sees, lets a consumer
// delete the key, and reports the create's outcome unknown: the re-read
// then finds the key absent, as it was before.
type consumerDeletes struct {
	*memstore.Store
	mu      sync.Mutex
	creates int // IfAbsent Puts that reached the store
	deleted bool
}

func (s *consumerDeletes) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	v, err := s.Store.Put(ctx, key, value, cond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cond.IsAbsent() {
		s.creates++
	}
	if err != nil || s.deleted {
		return v, err
	}
	s.deleted = true
	if err := s.Store.Delete(ctx, key, store.IfMatch(v)); err != nil {
		return "", err
	}
	return "", store.NewOpError("test", "put", key, store.ErrUnknownOutcome, nil)
}

// Absent before and absent after is no proof that a create did not
// apply: Update must not create the key again (the job would exist twice
// and the consumer's delete be lost), with or without UniqueValues.
func TestUnknownCreateThenAbsentIsNotCreatedAgain(t *testing.T) {
	for _, unique := range []bool{false, true} {
		t.Run(fmt.Sprintf("UniqueValues=%v", unique), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &consumerDeletes{Store: memstore.New()}
				set := func(cur []byte, exists bool) (cas.Decision, error) { return cas.Set([]byte("job 1")), nil }
				res, err := cas.Update(context.Background(), s, "jobs/1", set, &cas.Options{UniqueValues: unique})
				if !errors.Is(err, store.ErrUnknownOutcome) || res.Outcome == cas.Written {
					t.Errorf("UniqueValues %v: %+v, %v; want ErrUnknownOutcome", unique, res, err)
				}
				if _, ok := get(t, s, "jobs/1"); ok || s.creates != 1 {
					t.Errorf("UniqueValues %v: key present %v after %d creates; want absent after 1", unique, ok, s.creates)
				}
			})
		})
	}
}

// A create of unknown outcome that the re-read finds applied (our bytes)
// is still recognised with UniqueValues.
func TestUnknownCreateFoundWithUniqueValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := faultstore.New(memstore.New(), 1)
		fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)
		res, err := cas.Update(context.Background(), fs, "k", increment, &cas.Options{UniqueValues: true})
		if err != nil || res.Outcome != cas.Written {
			t.Fatalf("%+v, %v; want Written", res, err)
		}
		if e := wantValue(t, fs, "1"); e.Version != res.Entry.Version {
			t.Fatalf("result version %s, stored %s", res.Entry.Version, e.Version)
		}
	})
}
