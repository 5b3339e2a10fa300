package azblobstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/azblobstore"
)

// Open a store on Azurite's development account, create a key if absent,
// then compare-and-swap it. (Not run: it needs Azurite and an existing
// container; TestConformance runs the same calls.)
func ExampleOpen() {
	ctx := context.Background()
	s, err := azblobstore.Open(ctx, &azblobstore.Options{
		ServiceURL:  "http://127.0.0.1:10000/devstoreaccount1",
		Container:   "locks",
		Prefix:      "jobs",
		AccountName: azblobstore.DevAccountName,
		AccountKey:  azblobstore.DevAccountKey,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	v, err := s.Put(ctx, "leader", []byte("node-1"), store.IfAbsent)
	if errors.Is(err, store.ErrConflict) {
		fmt.Println("someone else is leader")
		return
	}
	if err != nil {
		log.Fatal(err) // ErrUnknownOutcome: re-read before deciding
	}
	if _, err := s.Put(ctx, "leader", []byte("node-1, term 2"), store.IfMatch(v)); err != nil {
		log.Fatal(err)
	}
}
