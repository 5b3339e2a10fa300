package storetest

import (
	"testing"

	"github.com/latchkey/latchkey/store"
)

// Capabilities are declared, never assumed. What a backend claims, the
// race subtests prove; what it does not claim must fail with
// store.ErrUnsupported rather than run unchecked.

func lacksCreate(s store.Store) bool { return !s.Capabilities().CreateIfAbsent }
func lacksCAS(s store.Store) bool    { return !s.Capabilities().CompareAndSwap }
func lacksCAD(s store.Store) bool    { return !s.Capabilities().CompareAndDelete }

// txnUndeclared: the store has a Txn method but does not declare
// Transactions (a wrapper, say); the method must then refuse.
func txnUndeclared(s store.Store) bool {
	_, ok := s.(store.Transactor)
	return ok && !s.Capabilities().Transactions
}

var capabilityTests = []subtest{
	{name: "undeclared CreateIfAbsent returns ErrUnsupported", need: lacksCreate, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		_, err := s.Put(ctx, "k", []byte("x"), store.IfAbsent)
		wantErr(t, "PutIfAbsent without CreateIfAbsent", err, store.ErrUnsupported)
		wantMissing(t, ctx, s, "k")
	}},
	{name: "undeclared CompareAndSwap returns ErrUnsupported", need: lacksCAS, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		_, err := s.Put(ctx, "k", []byte("y"), store.IfMatch(v))
		wantErr(t, "PutIfMatch without CompareAndSwap", err, store.ErrUnsupported)
		wantEntry(t, ctx, s, "k", []byte("x"), v)
	}},
	{name: "undeclared CompareAndDelete returns ErrUnsupported", need: lacksCAD, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		wantErr(t, "DeleteIfMatch without CompareAndDelete", s.Delete(ctx, "k", store.IfMatch(v)), store.ErrUnsupported)
		wantEntry(t, ctx, s, "k", []byte("x"), v)
	}},
	{name: "undeclared Transactions returns ErrUnsupported", need: txnUndeclared, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		tx := s.(store.Transactor)
		_, err := tx.Txn(ctx, []store.TxnOp{store.PutOp("k", []byte("x"), store.Unconditional)})
		wantErr(t, "Txn without Transactions", err, store.ErrUnsupported)
		wantMissing(t, ctx, s, "k")
	}},
}
