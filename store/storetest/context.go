package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// promptly bounds how long an operation on a done context may take before
// the suite calls it hung. It is a hang detector, not a performance check.
const promptly = 10 * time.Second

// ctxOp is one store call run on a done context.
type ctxOp struct {
	name string
	call func(ctx context.Context, s store.Store) error
}

func ctxOps(caps store.Capabilities, s store.Store, cur store.Version) []ctxOp {
	ops := []ctxOp{
		{"Get", func(ctx context.Context, s store.Store) error { _, err := s.Get(ctx, "k"); return err }},
		{"Get missing", func(ctx context.Context, s store.Store) error { _, err := s.Get(ctx, "absent"); return err }},
		{"Put", func(ctx context.Context, s store.Store) error {
			_, err := s.Put(ctx, "k", []byte("late"), store.Unconditional)
			return err
		}},
		{"Delete", func(ctx context.Context, s store.Store) error { return s.Delete(ctx, "k", store.Unconditional) }},
		{"List", func(ctx context.Context, s store.Store) error { _, err := s.List(ctx, "", nil); return err }},
	}
	if caps.CreateIfAbsent {
		ops = append(ops, ctxOp{"PutIfAbsent", func(ctx context.Context, s store.Store) error {
			_, err := s.Put(ctx, "new", []byte("late"), store.IfAbsent)
			return err
		}})
	}
	if caps.CompareAndSwap {
		ops = append(ops, ctxOp{"PutIfMatch", func(ctx context.Context, s store.Store) error {
			_, err := s.Put(ctx, "k", []byte("late"), store.IfMatch("stale-or-not"))
			return err
		}})
	}
	if tx, ok := s.(store.Transactor); ok && caps.Transactions {
		ops = append(ops, ctxOp{"Txn", func(ctx context.Context, s store.Store) error {
			_, err := tx.Txn(ctx, []store.TxnOp{store.PutOp("t", []byte("late"), store.Unconditional)})
			return err
		}})
	}
	if w, ok := s.(store.Watcher); ok && caps.Watch {
		ops = append(ops, ctxOp{"WaitChange", func(ctx context.Context, s store.Store) error {
			return w.WaitChange(ctx, "k", cur)
		}})
	}
	return ops
}

// errHung stands for the result of a call that did not return in time.
var errHung = errors.New("storetest: call did not return")

// runDone runs op on ctx in a goroutine and returns its error, or fails
// the test if it does not return within promptly.
func runDone(t *testing.T, ctx context.Context, s store.Store, op ctxOp) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op.call(ctx, s) }()
	select {
	case err := <-done:
		return err
	case <-time.After(promptly):
		t.Errorf("%s on a done context did not return within %v", op.name, promptly)
		return errHung
	}
}

func testDoneContext(t *testing.T, h Harness, makeCtx func(parent context.Context) context.Context, want error) {
	ctx, s := h.open(t)
	v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
	caps := s.Capabilities()
	for _, op := range ctxOps(caps, s, v) {
		dctx := makeCtx(ctx)
		err := runDone(t, dctx, s, op)
		if errors.Is(err, errHung) {
			continue
		}
		if err == nil {
			t.Errorf("%s on a done context succeeded, want an error", op.name)
			continue
		}
		if !errors.Is(err, want) && !errors.Is(err, store.ErrUnknownOutcome) {
			t.Errorf("%s on a done context: err = %v, want one matching %v or ErrUnknownOutcome", op.name, err, want)
		}
	}
	// The store still works with a live context.
	v = put(t, ctx, s, "after", []byte("ok"), store.Unconditional)
	wantEntry(t, ctx, s, "after", []byte("ok"), v)
}

var contextTests = []subtest{
	{name: "cancelled context returns promptly with an error", run: func(t *testing.T, h Harness) {
		testDoneContext(t, h, func(parent context.Context) context.Context {
			ctx, cancel := context.WithCancel(parent)
			cancel()
			return ctx
		}, context.Canceled)
	}},
	{name: "expired deadline returns promptly with an error", run: func(t *testing.T, h Harness) {
		testDoneContext(t, h, func(parent context.Context) context.Context {
			ctx, cancel := context.WithDeadline(parent, time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded)
	}},
	{name: "context cancelled while waiting returns promptly", need: hasWatch, run: func(t *testing.T, h Harness) {
		// Only a blocking operation can be cancelled mid-call; WaitChange
		// is the one the contract has.
		ctx, s := h.open(t)
		w, ok := s.(store.Watcher)
		if !ok {
			t.Fatalf("%T declares Watch but is not a store.Watcher", s)
		}
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		wctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		err := runDone(t, wctx, s, ctxOp{"WaitChange", func(ctx context.Context, _ store.Store) error {
			for range 1000 { // early returns are allowed; the context must still end the wait
				if err := w.WaitChange(ctx, "k", v); err != nil {
					return err
				}
			}
			return fmt.Errorf("WaitChange returned 1000 times without a change or an error")
		}})
		wantErr(t, "WaitChange cancelled while waiting", err, context.Canceled)
	}},
}
