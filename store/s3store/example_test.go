package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

// Open a store on an S3-compatible server (credentials from the AWS
// environment), create a key if absent, then compare-and-swap it. (Not run:
// it needs a server; TestConformanceLatchkey runs the same calls.)
func ExampleOpen() {
	ctx := context.Background()
	s, err := s3store.Open(ctx, "my-bucket", "jobs", &s3store.Options{Endpoint: "http://127.0.0.1:8500"})
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
