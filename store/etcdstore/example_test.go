package etcdstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/etcdstore"
)

// Compare-and-swap on etcd under a key prefix.
func ExampleOpen() {
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, &etcdstore.Options{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "myapp"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	v, err := s.Put(ctx, "config", []byte("v1"), store.IfAbsent) // stored at myapp/config
	if errors.Is(err, store.ErrConflict) {
		fmt.Println("someone created it first")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	// v is the key's mod_revision; the next write succeeds only if nobody
	// wrote in between.
	_, err = s.Put(ctx, "config", []byte("v2"), store.IfMatch(v))
	fmt.Println(err == nil)
}

// Two keys changed together, or neither: an etcd Txn.
func ExampleStore_Txn() {
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, &etcdstore.Options{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "bank"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	a, errA := s.Get(ctx, "alice")
	b, errB := s.Get(ctx, "bob")
	if err := errors.Join(errA, errB); err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.Txn(ctx, []store.TxnOp{
		store.PutOp("alice", []byte("90"), store.IfMatch(a.Version)),
		store.PutOp("bob", []byte("110"), store.IfMatch(b.Version)),
	})
	var te *store.TxnError
	if errors.As(err, &te) {
		fmt.Println("changed meanwhile:", te.Key)
	}
}
