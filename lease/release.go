package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/store"
)

// ForceRelease marks the lease at key released whoever holds it, keeping
// its token, so the next acquisition gets a higher token. It is for
// operators (latchkey lock release --force): the holder, if it is alive,
// is not told and may go on working until its next renew fails, which is
// why protected resources check the fencing token. by is written into the
// record as who released it. A record already released, or absent, is left
// as it is.
func ForceRelease(ctx context.Context, s store.Store, key, by string) error {
	return releaseIf(ctx, s, key, by, func(Record) error { return nil })
}

// ReleaseHolder is ForceRelease limited to a record whose Holder is
// holder: for a holder that knows its name but lost its *Lease (a crashed
// process restarted under the same name). It returns an error matching
// ErrHeld (a *HeldError) when someone else holds the lease.
func ReleaseHolder(ctx context.Context, s store.Store, key, holder string) error {
	return releaseIf(ctx, s, key, holder, func(r Record) error {
		if r.Holder != holder {
			return &HeldError{Key: key, Holder: r.Holder, Token: r.Token, Until: time.Now().Add(r.TTL)}
		}
		return nil
	})
}

func releaseIf(ctx context.Context, s store.Store, key, by string, ok func(Record) error) error {
	for attempt := 1; ; attempt++ {
		rec, v, err := Inspect(ctx, s, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Released {
			return nil
		}
		if err := ok(rec); err != nil {
			return err
		}
		rec.Released, rec.Holder, rec.Nonce, rec.Renewed = true, by, newNonce(), time.Now()
		_, err = s.Put(ctx, key, rec.encode(), store.IfMatch(v))
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) && !retryable(err) {
			return fmt.Errorf("lease: release %q: %w", key, err)
		}
		if attempt == maxFenceAttempts {
			return fmt.Errorf("lease: release %q: %w after %d attempts: %w", key, ErrContended, attempt, err)
		}
	}
}
