package resolve

import (
	"context"

	"github.com/latchkey/latchkey/internal/backoff"
)

// ReadRetry is how a backend sends a read (a get, a metadata read, a list
// page) again after a failure that changed nothing: a 5xx, a 429, a
// transport error. Writes are never sent again this way; their unknown
// outcomes are resolved by a Resolver.
type ReadRetry struct {
	// Attempts bounds the sends of one read; 1 (or less) sends it once.
	Attempts int
	// Backoff draws the delay before send n+1 (Backoff.Delay(n), full
	// jitter).
	Backoff backoff.Policy
	// Retryable reports whether a read that failed with err is sent again.
	Retryable func(err error) bool
}

// Do runs read until it succeeds, fails with an error Retryable refuses,
// has run Attempts times, or ctx ends (checked after every send and
// during every delay), and returns read's last error.
func (p ReadRetry) Do(ctx context.Context, read func() error) error {
	for n := 1; ; n++ {
		err := read()
		if err == nil || n >= p.Attempts || ctx.Err() != nil || !p.Retryable(err) {
			return err
		}
		if backoff.Sleep(ctx, p.Backoff.Delay(n)) != nil {
			return err
		}
	}
}
