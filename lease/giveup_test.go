package lease_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// TestGivingUpOnADeadStoreIsPrompt: an Acquire whose ctx ends while every
// request fails transiently (the store is down) returns soon after ctx
// ends, not a TTL later: leaving the queue is best effort, bounded well
// under the TTL, although cas.Update retries transient failures until its
// deadline. (lock run --wait 500ms against a dead store took 15 s.)
func TestGivingUpOnADeadStoreIsPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, wait = 15 * time.Second, 500 * time.Millisecond
		s := faultstore.New(memstore.New(), 1)
		s.Inject(faultstore.Rule{Fault: faultstore.FailBefore, Err: store.ErrTransient})
		lk, err := lease.NewLocker(s, "locks/dead", &lease.Options{Holder: "h", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		start := time.Now()
		_, err = lk.Acquire(ctx)
		took := time.Since(start)
		if err == nil || !errors.Is(err, store.ErrTransient) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire on a dead store: %v; want a transient failure or the deadline", err)
		}
		if limit := wait + 3*time.Second; took > limit {
			t.Fatalf("Acquire on a dead store returned %v after it began, %v after ctx ended; want within %v (the TTL is %v)", took, took-wait, limit, ttl)
		}
	})
}
