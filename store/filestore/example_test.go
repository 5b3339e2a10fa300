package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
)

// Two handles on one directory (they could be two processes) race to
// create a key: exactly one wins, and the winner's compare-and-swap chain
// continues from the versions its writes return.
func Example() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "filestore-example")
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "store") // created by Open

	a, err := filestore.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := filestore.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	v, err := a.Put(ctx, "locks/backup", []byte("held by a"), store.IfAbsent)
	fmt.Println("a creates:", err == nil)
	_, err = b.Put(ctx, "locks/backup", []byte("held by b"), store.IfAbsent)
	fmt.Println("b conflicts:", errors.Is(err, store.ErrConflict))

	_, err = a.Put(ctx, "locks/backup", []byte("released"), store.IfMatch(v))
	fmt.Println("a swaps with its version:", err == nil)

	e, _ := b.Get(ctx, "locks/backup")
	fmt.Printf("b reads %q\n", e.Value)
	// Output:
	// a creates: true
	// b conflicts: true
	// a swaps with its version: true
	// b reads "released"
}

// A transaction writes several keys all or nothing, even if the process
// dies half way.
func ExampleStore_Txn() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "filestore-example")
	defer os.RemoveAll(dir)
	s, err := filestore.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	s.Put(ctx, "accounts/a", []byte("10"), store.IfAbsent)
	_, err = s.Txn(ctx, []store.TxnOp{
		store.PutOp("accounts/a", []byte("5"), store.Unconditional),
		store.PutOp("accounts/b", []byte("5"), store.IfAbsent),
	})
	fmt.Println("moved:", err == nil)

	_, err = s.Txn(ctx, []store.TxnOp{
		store.PutOp("accounts/a", []byte("0"), store.Unconditional),
		store.PutOp("accounts/b", []byte("10"), store.IfAbsent), // b exists now
	})
	var te *store.TxnError
	fmt.Println("second conflicts on op:", errors.As(err, &te) && te.Index == 1)

	e, _ := s.Get(ctx, "accounts/a")
	fmt.Printf("a is still %s\n", e.Value)
	// Output:
	// moved: true
	// second conflicts on op: true
	// a is still 5
}
