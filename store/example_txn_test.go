package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// A payload and the version marker that describes it, updated together or
// not at all, on a store with real transactions.
func ExampleTransactor() {
	ctx := context.Background()
	var s store.Store = memstore.New()
	tx, ok := s.(store.Transactor)
	if !ok || !s.Capabilities().Transactions {
		fmt.Println("no transactions here: pack both into one key instead")
		return
	}
	vs, _ := tx.Txn(ctx, []store.TxnOp{
		store.PutOp("app/payload", []byte("payload v1"), store.IfAbsent),
		store.PutOp("app/version", []byte("1"), store.IfAbsent),
	})
	marker := vs[1]

	// Move both to v2, only if nobody changed the marker since we read it.
	_, err := tx.Txn(ctx, []store.TxnOp{
		store.PutOp("app/payload", []byte("payload v2"), store.Unconditional),
		store.PutOp("app/version", []byte("2"), store.IfMatch(marker)),
	})
	fmt.Println("first update:", err)

	// The same update again carries a stale marker: nothing is written.
	_, err = tx.Txn(ctx, []store.TxnOp{
		store.PutOp("app/payload", []byte("payload v3"), store.Unconditional),
		store.PutOp("app/version", []byte("3"), store.IfMatch(marker)),
	})
	var te *store.TxnError
	fmt.Println("stale update refused:", errors.Is(err, store.ErrConflict), errors.As(err, &te) && te.Index == 1)
	p, _ := s.Get(ctx, "app/payload")
	fmt.Println(string(p.Value))
	// Output:
	// first update: <nil>
	// stale update refused: true true
	// payload v2
}
