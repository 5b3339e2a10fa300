package gcsstore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/gcsstore"
)

// Example opens a store under a prefix of a GCS bucket and uses a
// create-if-absent and a compare-and-swap. With no Endpoint the store
// uses application default credentials (or STORAGE_EMULATOR_HOST).
func Example() {
	ctx := context.Background()
	s, err := gcsstore.Open(ctx, &gcsstore.Options{
		Bucket:   "my-bucket",
		Prefix:   "app/locks",
		Endpoint: os.Getenv("GCS_ENDPOINT"), // e.g. http://127.0.0.1:4443/storage/v1/
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	v, err := s.Put(ctx, "config", []byte("v1"), store.IfAbsent)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The version is the object's generation: only a writer that saw v wins.
	if _, err := s.Put(ctx, "config", []byte("v2"), store.IfMatch(v)); err != nil {
		fmt.Println(err)
	}
}
