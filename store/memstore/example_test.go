package memstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// Create a key only if it is absent, then update it with compare-and-swap
// using the version each write returns.
func Example() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	v, err := s.Put(ctx, "jobs/report", []byte("queued"), store.IfAbsent)
	fmt.Println("created:", err == nil)

	// A second creator loses.
	_, err = s.Put(ctx, "jobs/report", []byte("queued"), store.IfAbsent)
	fmt.Println("second create conflicts:", errors.Is(err, store.ErrConflict))

	// CAS from the version we hold.
	v2, err := s.Put(ctx, "jobs/report", []byte("running"), store.IfMatch(v))
	fmt.Println("cas applied:", err == nil)

	// The old version no longer matches.
	_, err = s.Put(ctx, "jobs/report", []byte("done"), store.IfMatch(v))
	fmt.Println("stale cas conflicts:", errors.Is(err, store.ErrConflict))

	e, _ := s.Get(ctx, "jobs/report")
	fmt.Printf("%s, current version matches: %v\n", e.Value, e.Version == v2)
	// Output:
	// created: true
	// second create conflicts: true
	// cas applied: true
	// stale cas conflicts: true
	// running, current version matches: true
}
