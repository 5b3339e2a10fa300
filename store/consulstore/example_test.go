package consulstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// Compare-and-swap on Consul KV (or latchkey serve) under a key prefix.
func ExampleOpen() {
	ctx := context.Background()
	s, err := consulstore.Open(ctx, &consulstore.Options{Address: "127.0.0.1:8500", Prefix: "myapp"})
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
	// v is the key's ModifyIndex; the next write succeeds only if nobody
	// wrote in between.
	_, err = s.Put(ctx, "config", []byte("v2"), store.IfMatch(v))
	fmt.Println(err == nil)
}
