package faultstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// With no rules a faultstore is transparent: it passes the whole
// conformance suite, transactions and watches included.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(tb testing.TB) store.Store {
		s := faultstore.New(memstore.New(), 1)
		tb.Cleanup(func() { s.Close() })
		return s
	}})
}

// plain hides memstore's optional interfaces.
type plain struct{ store.Store }

func (p plain) Capabilities() store.Capabilities {
	c := p.Store.Capabilities()
	c.Transactions, c.Watch = false, false
	return c
}

// Over a store without transactions or watches, the wrapper declares
// neither and its methods refuse: it also passes the suite that way.
func TestConformanceWithoutOptionalInterfaces(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(tb testing.TB) store.Store {
		s := faultstore.New(plain{memstore.New()}, 1)
		tb.Cleanup(func() { s.Close() })
		return s
	}})
}

func TestFailBeforeChangesNothing(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	v, err := fs.Put(ctx, "k", []byte("old"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	fs.FailNext(faultstore.Writes, 3, faultstore.FailBefore)
	if _, err := fs.Put(ctx, "k", []byte("new"), store.IfMatch(v)); !errors.Is(err, store.ErrTransient) || !errors.Is(err, faultstore.ErrInjected) {
		t.Errorf("Put: err = %v, want injected ErrTransient", err)
	}
	if err := fs.Delete(ctx, "k", store.Unconditional); !errors.Is(err, store.ErrTransient) {
		t.Errorf("Delete: err = %v, want ErrTransient", err)
	}
	if _, err := fs.Txn(ctx, []store.TxnOp{store.DeleteOp("k", store.Unconditional)}); !errors.Is(err, store.ErrTransient) {
		t.Errorf("Txn: err = %v, want ErrTransient", err)
	}
	e, err := fs.Get(ctx, "k")
	if err != nil || string(e.Value) != "old" || e.Version != v {
		t.Errorf("after refused writes Get = %q@%q, %v; want old@%q", e.Value, e.Version, err, v)
	}
	// The rule has expired: the next write goes through.
	if _, err := fs.Put(ctx, "k", []byte("new"), store.IfMatch(v)); err != nil {
		t.Errorf("fourth write: %v", err)
	}
	if got := fs.Injected(); got != 3 {
		t.Errorf("Injected() = %d, want 3", got)
	}
}

func TestApplyThenFailApplies(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	v, _ := fs.Put(ctx, "k", []byte("old"), store.Unconditional)
	fs.FailNext(faultstore.OpPut|faultstore.OpDelete, 2, faultstore.ApplyThenFail)
	if _, err := fs.Put(ctx, "k", []byte("new"), store.IfMatch(v)); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Errorf("Put: err = %v, want ErrUnknownOutcome", err)
	}
	e, err := fs.Get(ctx, "k")
	if err != nil || string(e.Value) != "new" || e.Version == v {
		t.Fatalf("Get after applied Put = %q@%q, %v; want new at a new version", e.Value, e.Version, err)
	}
	if err := fs.Delete(ctx, "k", store.IfMatch(e.Version)); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Errorf("Delete: err = %v, want ErrUnknownOutcome", err)
	}
	if _, err := fs.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after applied Delete: err = %v, want ErrNotFound", err)
	}
}

func TestRuleSelectsOpsAndPrefix(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: "locks/", Err: store.ErrConflict})
	if _, err := fs.Put(ctx, "jobs/a", []byte("x"), store.Unconditional); err != nil {
		t.Errorf("Put outside the prefix: %v", err)
	}
	if _, err := fs.Put(ctx, "locks/a", []byte("x"), store.Unconditional); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Put inside the prefix: err = %v, want the rule's ErrConflict", err)
	}
	if _, err := fs.Get(ctx, "jobs/a"); err != nil {
		t.Errorf("Get is not in the rule: %v", err)
	}
	var oe *store.OpError
	_, err := fs.Put(ctx, "locks/b", nil, store.Unconditional)
	if !errors.As(err, &oe) || oe.Op != "put" || oe.Key != "locks/b" || oe.Backend != "faultstore" {
		t.Errorf("injected error = %#v, want an OpError naming put and the key", err)
	}
	fs.Reset()
	if _, err := fs.Put(ctx, "locks/a", []byte("x"), store.Unconditional); err != nil {
		t.Errorf("after Reset: %v", err)
	}
}

func TestProbIsDeterministicPerSeed(t *testing.T) {
	pattern := func(seed uint64) []bool {
		fs := faultstore.New(memstore.New(), seed)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpGet, Prob: 0.3})
		out := make([]bool, 200)
		for i := range out {
			_, err := fs.Get(context.Background(), "k")
			out[i] = errors.Is(err, faultstore.ErrInjected)
		}
		return out
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	n := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 gave different faults at call %d", i)
		}
		if a[i] {
			n++
		}
	}
	if n < 30 || n > 90 {
		t.Errorf("%d of 200 calls failed at p=0.3", n)
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Errorf("seeds 7 and 8 gave the same 200 faults")
	}
}

func TestWatchPassThroughAndFault(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	v, _ := fs.Put(ctx, "k", []byte("x"), store.Unconditional)
	// The version already differs: returns at once.
	if err := fs.WaitChange(ctx, "k", "other"); err != nil {
		t.Errorf("WaitChange: %v", err)
	}
	fs.FailNext(faultstore.OpWatch, 1, faultstore.FailBefore)
	if err := fs.WaitChange(ctx, "k", v); !errors.Is(err, store.ErrTransient) {
		t.Errorf("WaitChange with a fault: err = %v, want ErrTransient", err)
	}
}

func TestOptionalInterfacesRefuseWithoutInner(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(plain{memstore.New()}, 1)
	c := fs.Capabilities()
	if c.Transactions || c.Watch {
		t.Errorf("Capabilities = %+v over a store without Txn and WaitChange", c)
	}
	if _, err := fs.Txn(ctx, []store.TxnOp{store.PutOp("k", nil, store.Unconditional)}); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("Txn: err = %v, want ErrUnsupported", err)
	}
	if err := fs.WaitChange(ctx, "k", ""); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("WaitChange: err = %v, want ErrUnsupported", err)
	}
}
