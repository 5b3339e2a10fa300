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
	r := &resolve.Resolver{
		Attempts: 3, Backoff: time.Millisecond,
		Err: func(op, key string, f resolve.Failure, cause error) *store.OpError {
			return f.OpError("example", op, key, cause)
		},
		Look: func(ctx context.Context, key string) (resolve.Stored, bool, error) {
			return resolve.Stored{Nonce: "n1", Version: "v7"}, true, nil
		},
	}
	send := func() (store.Version, resolve.Failure, error) {
		return "", resolve.Failure{Kind: store.ErrConflict, Status: 412}, errors.New("412")
	}
	v, err := r.Put(context.Background(), "jobs/a", "n1", true, send, resolve.Failure{Kind: store.ErrUnknownOutcome}, errors.New("timeout"))
	fmt.Println(v, err)
	// Output: v7 <nil>
}
