package faultstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// A write that was applied but reported as an unknown outcome: the caller
// re-reads to learn what happened.
func Example() {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 1)
	fs.FailNext(faultstore.OpPut, 1, faultstore.ApplyThenFail)

	_, err := fs.Put(ctx, "jobs/a", []byte("mine"), store.IfAbsent)
	fmt.Println("unknown outcome:", errors.Is(err, store.ErrUnknownOutcome))
	fmt.Println("injected:", errors.Is(err, faultstore.ErrInjected))

	e, err := fs.Get(ctx, "jobs/a")
	fmt.Printf("re-read: %s %v\n", e.Value, err)

	// Retrying the create blindly would now report a conflict.
	_, err = fs.Put(ctx, "jobs/a", []byte("mine"), store.IfAbsent)
	fmt.Println("retry conflicts:", errors.Is(err, store.ErrConflict))
	// Output:
	// unknown outcome: true
	// injected: true
	// re-read: mine <nil>
	// retry conflicts: true
}

// Transient failures with a seeded probability: the same seed fails the
// same calls.
func ExampleRule() {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), 42)
	fs.Inject(faultstore.Rule{Ops: faultstore.Reads, Prob: 0.5})
	fs.Put(ctx, "k", []byte("v"), store.Unconditional)
	failed := 0
	for range 1000 {
		if _, err := fs.Get(ctx, "k"); errors.Is(err, store.ErrTransient) {
			failed++
		}
	}
	fmt.Println(failed == fs.Injected(), failed > 400 && failed < 600)
	// Output: true true
}
