package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
)

// ForceRelease releases the lease at key whoever holds it, keeping its
// token, so the next acquisition gets a higher one. It is for operators
// (latchkey lock release --force). The holder, if it is alive, is not
// told: it learns at its next renew, which fails. So that it has stopped
// before anyone else holds the lease, the record is marked Forced rather
// than Released: a contender takes it over only after seeing it unchanged
// for a full TTL, as a record whose holder stopped renewing. Only a
// holder's own Lease.Release lets the next contender in at once. by is
// written into the record as who released it. A record already released
// or forced, or absent, is left as it is.
func ForceRelease(ctx context.Context, s store.Store, key, by string) error {
	return releaseIf(ctx, s, key, by, func(Record) error { return nil })
}

// ReleaseHolder is ForceRelease limited to a record whose Holder is
// holder: for a holder that knows its name but lost its *Lease (a crashed
// process restarted under the same name). A name proves nothing about
// which process is still running, so the record is marked Forced as by
// ForceRelease. It returns an error matching ErrHeld (a *HeldError) when
// someone else holds the lease.
func ReleaseHolder(ctx context.Context, s store.Store, key, holder string) error {
	return releaseIf(ctx, s, key, holder, func(r Record) error {
		if r.Holder != holder {
			return &HeldError{Key: key, Holder: r.Holder, Token: r.Token, Until: time.Now().Add(r.TTL)}
		}
		return nil
	})
}

// releaseOptions bound releaseIf's and FencedPut's compare-and-swap loops
// (jittered exponential backoff, then ErrContended).
var releaseOptions = cas.Options{MaxAttempts: 20, BaseDelay: time.Millisecond, MaxDelay: 100 * time.Millisecond, UniqueValues: true}

// releaseIf marks the record forced if ok accepts it: one cas.Update,
// whose every write carries a fresh nonce.
func releaseIf(ctx context.Context, s store.Store, key, by string, ok func(Record) error) error {
	_, err := cas.Update(ctx, s, key, func(cur []byte, exists bool) (cas.Decision, error) {
		if !exists {
			return cas.Abort(), nil
		}
		rec, err := decodeRecord(key, cur)
		if err != nil {
			return cas.Decision{}, err
		}
		if rec.Released || rec.Forced {
			return cas.Abort(), nil
		}
		if err := ok(rec); err != nil {
			return cas.Decision{}, err
		}
		rec.Forced, rec.Holder, rec.Nonce, rec.Renewed = true, by, newNonce(), time.Now()
		return cas.Set(rec.encode()), nil
	}, &releaseOptions)
	var held *HeldError
	if errors.As(err, &held) || errors.Is(err, ErrCorrupt) {
		return err
	}
	if err != nil {
		return fmt.Errorf("lease: release %q: %w", key, err)
	}
	return nil
}
