package resolve_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// A backend whose put timed out resolves it: the key already holds the
// put's nonce, so the put won.
func ExampleResolver_Put() {
	type failure struct{ kind error }
	r := &resolve.Resolver[failure]{
		Attempts: 3, Backoff: time.Millisecond,
		Kind: func(f failure) error { return f.kind },
		Err: func(op, key string, f failure, cause error) error {
			return &store.OpError{Op: op, Key: key, Backend: "example", Kind: f.kind, Err: cause}
		},
		Unknown: func(op, key string, f failure, cause error) error {
			return &store.OpError{Op: op, Key: key, Backend: "example", Kind: store.ErrUnknownOutcome, Err: cause}
		},
		Look: func(ctx context.Context, key string) (resolve.Stored, bool, error) {
			return resolve.Stored{Nonce: "n1", Version: "v7"}, true, nil
		},
	}
	send := func() (store.Version, failure, error) { return "", failure{store.ErrConflict}, errors.New("412") }
	v, err := r.Put(context.Background(), "jobs/a", "n1", true, send, failure{store.ErrUnknownOutcome}, errors.New("timeout"))
	fmt.Println(v, err)
	// Output: v7 <nil>
}
