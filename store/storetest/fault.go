package storetest

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
)

// The unknown-outcome subtests wrap the backend in a faultstore and show
// that a caller told "outcome unknown" learns the truth by re-reading: the
// backend's versions are what tell an applied write from one that never
// happened.

func openFaults(t *testing.T, h Harness) (context.Context, *faultstore.Store) {
	t.Helper()
	ctx, s := h.open(t)
	return ctx, faultstore.New(s, uint64(seed()))
}

var faultTests = []subtest{
	{name: "after an applied-then-unknown Put a re-read finds the value at a new version", need: hasCAS, run: func(t *testing.T, h Harness) {
		ctx, fs := openFaults(t, h)
		v1 := put(t, ctx, fs, "k", []byte("old"), store.Unconditional)
		fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)
		_, err := fs.Put(ctx, "k", []byte("new"), store.IfMatch(v1))
		wantErr(t, "Put with an injected unknown outcome", err, store.ErrUnknownOutcome)
		e := get(t, ctx, fs, "k")
		if string(e.Value) != "new" || e.Version == v1 || e.Version == "" {
			t.Fatalf("re-read = %q@%q, want the new value at a version other than %q", e.Value, e.Version, v1)
		}
		// Retrying blindly with the old version must not apply twice.
		_, err = fs.Put(ctx, "k", []byte("newer"), store.IfMatch(v1))
		wantErr(t, "blind retry with the pre-write version", err, store.ErrConflict)
		wantEntry(t, ctx, fs, "k", []byte("new"), e.Version)
	}},
	{name: "after a failed-before-apply Put a re-read finds the old version", need: hasCAS, run: func(t *testing.T, h Harness) {
		ctx, fs := openFaults(t, h)
		v1 := put(t, ctx, fs, "k", []byte("old"), store.Unconditional)
		fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Fault: faultstore.FailBefore, Err: store.ErrUnknownOutcome, Count: 1})
		_, err := fs.Put(ctx, "k", []byte("new"), store.IfMatch(v1))
		wantErr(t, "Put with an injected unknown outcome", err, store.ErrUnknownOutcome)
		wantEntry(t, ctx, fs, "k", []byte("old"), v1)
		v2 := put(t, ctx, fs, "k", []byte("new"), store.IfMatch(v1))
		wantEntry(t, ctx, fs, "k", []byte("new"), v2)
	}},
	{name: "after an applied-then-unknown create a re-read finds the writer's value", need: hasCreate, run: func(t *testing.T, h Harness) {
		ctx, fs := openFaults(t, h)
		fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)
		_, err := fs.Put(ctx, "k", []byte("mine"), store.IfAbsent)
		wantErr(t, "PutIfAbsent with an injected unknown outcome", err, store.ErrUnknownOutcome)
		wantEntry(t, ctx, fs, "k", []byte("mine"), "")
		_, err = fs.Put(ctx, "k", []byte("mine"), store.IfAbsent)
		wantErr(t, "blind retry of the create", err, store.ErrConflict)
	}},
	{name: "after an applied-then-unknown Delete a re-read finds the key gone", need: hasCAD, run: func(t *testing.T, h Harness) {
		ctx, fs := openFaults(t, h)
		v := put(t, ctx, fs, "k", []byte("x"), store.Unconditional)
		fs.FailNext(faultstore.OpDelete, 1, faultstore.ApplyThenFail)
		wantErr(t, "DeleteIfMatch with an injected unknown outcome", fs.Delete(ctx, "k", store.IfMatch(v)), store.ErrUnknownOutcome)
		wantMissing(t, ctx, fs, "k")
		wantErr(t, "blind retry of the delete", fs.Delete(ctx, "k", store.IfMatch(v)), store.ErrConflict)
	}},
}
