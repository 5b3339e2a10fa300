package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/latchkey/latchkey/store"
)

const maxResolveDelay = 2 * time.Second

// pause sleeps a jittered, exponentially growing delay before resolution
// attempt n, or returns the context's error.
func (s *Store) pause(ctx context.Context, n int) error {
	d := s.backoff << n
	if d > maxResolveDelay || d <= 0 {
		d = maxResolveDelay
	}
	t := time.NewTimer(time.Duration(rand.Int64N(int64(d)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// unknown is the error of a write whose outcome could not be resolved.
func unknown(op, key string, last failure, cause error) error {
	last.kind = store.ErrUnknownOutcome
	return opError(op, key, last, cause)
}

// resolvePut decides the outcome of a Put whose attempt ended without an
// answer (DESIGN.md §1, spec §8–9): read the object's metadata; our nonce
// there means we won. Otherwise resend the same write — same nonce, same
// generation precondition — so that at most one attempt commits: a success
// is a win, and after a 412 or 404 another read finds either our nonce
// (won: the resend saw our own earlier write) or not (ErrUnknownOutcome:
// the earlier attempt may have committed and been superseded since, and
// calling that a conflict could make a caller apply its update twice).
func (s *Store) resolvePut(ctx context.Context, key, nonce string, send func() (store.Version, failure, error), last failure, lastErr error) (store.Version, error) {
	for n := 0; n < s.attempts; n++ {
		if err := s.pause(ctx, n); err != nil {
			return "", unknown("put", key, last, errors.Join(lastErr, err))
		}
		if cur, ok, err := s.nonceOf(ctx, key); err == nil && ok && cur.nonce == nonce {
			return cur.version, nil
		}
		v, f, err := send()
		if err == nil {
			return v, nil
		}
		if f.kind == store.ErrUnknownOutcome || f.kind == store.ErrTransient {
			last, lastErr = f, errors.Join(lastErr, err)
			continue
		}
		cur, ok, rerr := s.nonceOf(ctx, key)
		switch {
		case rerr != nil:
			return "", unknown("put", key, f, errors.Join(lastErr, err, rerr))
		case ok && cur.nonce == nonce:
			return cur.version, nil
		default:
			return "", unknown("put", key, f, errors.Join(lastErr, err))
		}
	}
	return "", unknown("put", key, last, fmt.Errorf("unresolved after %d resends: %w", s.attempts, lastErr))
}

// resolveDelete resends a delete whose outcome is unknown. An
// unconditional delete is idempotent. A conditional one that now fails its
// precondition may have been the attempt that removed the generation, so
// that answer stays unknown.
func (s *Store) resolveDelete(ctx context.Context, key string, kind opKind, send func() (failure, error), last failure, lastErr error) error {
	for n := 0; n < s.attempts; n++ {
		if err := s.pause(ctx, n); err != nil {
			return unknown("delete", key, last, errors.Join(lastErr, err))
		}
		f, err := send()
		switch {
		case err == nil:
			return nil
		case f.kind == store.ErrUnknownOutcome || f.kind == store.ErrTransient:
			last, lastErr = f, errors.Join(lastErr, err)
		case kind == opCondDelete && f.kind == store.ErrConflict:
			return unknown("delete", key, f, errors.Join(lastErr, err))
		default:
			return opError("delete", key, f, err)
		}
	}
	return unknown("delete", key, last, fmt.Errorf("unresolved after %d resends: %w", s.attempts, lastErr))
}

type stored struct {
	nonce   string
	version store.Version
}

// nonceOf reads which write the key's object holds: the nonce from its
// custom metadata, with its generation. ok is false when it is absent.
func (s *Store) nonceOf(ctx context.Context, key string) (stored, bool, error) {
	a, err := s.object(key).Attrs(ctx)
	if err != nil {
		if f := classify(opRead, err); f.kind == store.ErrNotFound {
			return stored{}, false, nil
		}
		return stored{}, false, err
	}
	return stored{nonce: a.Metadata[metaNonce], version: version(a.Generation)}, true, nil
}
