// Package resolve decides the outcome of object-store writes that ended
// without an answer: a timeout, a reset connection or a 5xx after the
// request was sent, when the write may or may not have been applied (and
// an SDK's own resend of a conditional write that already won would answer
// 412 and look lost). It is the backend-independent
// part shared by s3store, gcsstore and azblobstore. A backend supplies small
// functions — send the write (again), sort its errors, look up which
// write's nonce the key holds, build its own errors — and keeps everything SDK-specific (status
// codes, metadata) to itself.
//
// The promise: a write is reported as done only when the key is seen to
// hold its nonce or a resend of the very same if-match write succeeds
// (only if-match writes and conditional deletes are resent: a late first
// copy of any other write could land after the resend was reported done);
// every other ending of a resolution is store.ErrUnknownOutcome, never
// ErrConflict, because an earlier attempt may have committed and been
// superseded since. Resolution is bounded by Attempts and by ctx, with
// jittered exponential backoff capped at MaxDelay.
//
// Beside the Resolver it holds what the object-store backends share
// about requests in general: the fresh nonce each write carries
// (NewNonce), the kinds no backend-specific rule decides (Missing,
// Fallback), and the bounded resend of a read that changed nothing
// (ReadRetry).
package resolve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// MaxDelay caps the delay before one resolution attempt.
const MaxDelay = 2 * time.Second

// Pause sleeps a jittered, exponentially growing delay before resolution
// attempt n (n ≥ 0) — uniform in (0, first·2^n], capped at MaxDelay; a
// first of zero or less waits under MaxDelay — or returns the context's
// error if it ends first.
func Pause(ctx context.Context, first time.Duration, n int) error {
	p := backoff.Policy{Base: first, Max: MaxDelay}
	if first <= 0 {
		p.Base = MaxDelay
	}
	// Delay is in [0, ceiling); one nanosecond more keeps every pause
	// above zero.
	return backoff.Sleep(ctx, p.Delay(n+1)+1)
}

// Stored is what a key currently holds: the nonce of the write that put it
// there and its version.
type Stored struct {
	Nonce   string
	Version store.Version
}

// Resolver resolves one backend's writes.
type Resolver struct {
	Attempts int           // resends at most; must be positive
	Backoff  time.Duration // first delay, see Pause

	// Err builds the backend's error for an operation that failed as f
	// (usually f.OpError with the backend's name). An operation whose
	// outcome stays unknown is reported through Err too, with the last
	// failure seen and Kind store.ErrUnknownOutcome.
	Err func(op, key string, f Failure, cause error) *store.OpError
	// Look reads which write the key holds; ok is false when it is absent.
	Look func(ctx context.Context, key string) (cur Stored, ok bool, err error)
	// Again reports whether a resend that failed with this kind is itself
	// of unknown outcome and is resent again. Nil means only
	// store.ErrUnknownOutcome.
	Again func(kind error) bool
	// KeepCauses keeps every resend's error in the final error's cause;
	// otherwise only the latest is kept.
	KeepCauses bool
	// Classify sorts the error of one request of the given kind (the
	// backend's classify function); SendPut and SendDelete need it.
	Classify func(kind OpKind, err error) Failure
	// NoBucket is the Failure.Code of a missing bucket or container: an
	// unconditional SendDelete of a missing key succeeds, but one whose
	// bucket is missing fails. Empty: every ErrNotFound is the key's.
	NoBucket string
}

// unknown is the error of an operation whose outcome stays unknown; f is
// the last failure seen.
func (r *Resolver) unknown(op, key string, f Failure, cause error) error {
	f.Kind = store.ErrUnknownOutcome
	return r.Err(op, key, f, cause)
}

func (r *Resolver) again(kind error) bool {
	if r.Again != nil {
		return r.Again(kind)
	}
	return kind == store.ErrUnknownOutcome
}

func (r *Resolver) next(lastErr, err error) error {
	if r.KeepCauses {
		return errors.Join(lastErr, err)
	}
	return err
}

// SendPut sends a put of kind under cond once: put makes the request and
// returns the new version, and its error is sorted by r.Classify. A
// failure whose outcome is known is r.Err("put", …); one of unknown
// outcome is decided by Put, with put as the resend.
func (r *Resolver) SendPut(ctx context.Context, key, nonce string, kind OpKind, cond store.Condition, put func() (store.Version, error)) (store.Version, error) {
	send := func() (store.Version, Failure, error) {
		v, err := put()
		if err != nil {
			return "", r.Classify(kind, err), err
		}
		return v, Failure{}, nil
	}
	v, f, err := send()
	if err == nil {
		return v, nil
	}
	if f.Kind != store.ErrUnknownOutcome {
		return "", r.Err("put", key, f, err)
	}
	_, ifMatch := cond.Match()
	return r.Put(ctx, key, nonce, ifMatch, send, f, err)
}

// SendDelete sends a delete of kind once: del makes the request, and its
// error is sorted by r.Classify. An unconditional delete of a missing key
// succeeds (of a missing bucket, r.NoBucket, it fails). A failure whose
// outcome is known is r.Err("delete", …); one of unknown outcome is
// decided by Delete, with del as the resend.
func (r *Resolver) SendDelete(ctx context.Context, key string, kind OpKind, del func() error) error {
	send := func() (Failure, error) {
		err := del()
		if err == nil {
			return Failure{}, nil
		}
		f := r.Classify(kind, err)
		if kind == OpWrite && f.Kind == store.ErrNotFound && (r.NoBucket == "" || f.Code != r.NoBucket) {
			return Failure{}, nil
		}
		return f, err
	}
	f, err := send()
	if err == nil {
		return nil
	}
	if f.Kind != store.ErrUnknownOutcome {
		return r.Err("delete", key, f, err)
	}
	return r.Delete(ctx, key, kind.Conditional(), send, f, err)
}

// Put decides the outcome of a put whose attempt ended as last/lastErr
// without an answer: read the key; our nonce there means we won. A put
// that is not an if-match (unconditional, or if-absent) is then only
// looked for again, never resent (see Settle): an if-absent's late first
// copy would create the key again after a delete that followed the
// resend's success. An if-match is resent — same nonce, same condition — so that at most one
// attempt commits: a success is a win, and after a definite failure (412,
// 409, 404) another read finds either our nonce (won: the resend saw our
// own earlier write) or not (unknown: calling it a conflict could make a
// caller apply its update twice). The resend's own status stays in the
// error.
func (r *Resolver) Put(ctx context.Context, key, nonce string, ifMatch bool, send func() (store.Version, Failure, error), last Failure, lastErr error) (store.Version, error) {
	if !ifMatch {
		return r.Settle(ctx, key, nonce, last, lastErr)
	}
	for n := 0; n < r.Attempts; n++ {
		if err := Pause(ctx, r.Backoff, n); err != nil {
			return "", r.unknown("put", key, last, errors.Join(lastErr, err))
		}
		if cur, ok, err := r.Look(ctx, key); err == nil && ok && cur.Nonce == nonce {
			return cur.Version, nil
		}
		v, f, err := send()
		if err == nil {
			return v, nil
		}
		if r.again(f.Kind) {
			last, lastErr = f, r.next(lastErr, err)
			continue
		}
		cur, ok, rerr := r.Look(ctx, key)
		switch {
		case rerr != nil:
			return "", r.unknown("put", key, f, errors.Join(lastErr, err, rerr))
		case ok && cur.Nonce == nonce:
			return cur.Version, nil
		default:
			return "", r.unknown("put", key, f, errors.Join(lastErr, err))
		}
	}
	return "", r.unknown("put", key, last, fmt.Errorf("unresolved after %d resends: %w", r.Attempts, lastErr))
}

// Settle decides the outcome of a put whose attempt ended without an
// answer, without resending it: the key holding our nonce
// means it won; otherwise it stays unknown. A resend cannot help here,
// whatever its nonce: the first copy may still be in flight, and if it
// lands after the resend was reported done it undoes every write made in
// between (Put A "ok", Put B ok, the key holds A again) — on an object
// store whose versions are digests of the bytes, at A's old version.
//
// An if-match resend is safe where a version is never returned twice for
// a key (store.Capabilities.UniqueVersions): the late copy's condition is
// spent. On a store whose versions are digests of the bytes it lands
// again only if the key is rewritten with the very bytes it matched.
func (r *Resolver) Settle(ctx context.Context, key, nonce string, last Failure, lastErr error) (store.Version, error) {
	for n := 0; n < r.Attempts; n++ {
		if err := Pause(ctx, r.Backoff, n); err != nil {
			return "", r.unknown("put", key, last, errors.Join(lastErr, err))
		}
		cur, ok, err := r.Look(ctx, key)
		if err == nil && ok && cur.Nonce == nonce {
			return cur.Version, nil
		}
		if err != nil {
			lastErr = r.next(lastErr, err)
		}
	}
	return "", r.unknown("put", key, last, fmt.Errorf("not seen after %d looks, not resent: %w", r.Attempts, lastErr))
}

// Delete resends a conditional delete whose outcome is unknown; one that
// now fails its condition (store.ErrConflict) may have been the attempt
// that removed the version, so that answer stays unknown. An
// unconditional delete is not resent and stays unknown: it is idempotent
// only when nothing else writes, and a resend reported done while the
// first copy is still in flight lets that copy delete a later write; a
// delete leaves no nonce to look for.
func (r *Resolver) Delete(ctx context.Context, key string, conditional bool, send func() (Failure, error), last Failure, lastErr error) error {
	if !conditional {
		return r.unknown("delete", key, last, fmt.Errorf("not resent: %w", lastErr))
	}
	for n := 0; n < r.Attempts; n++ {
		if err := Pause(ctx, r.Backoff, n); err != nil {
			return r.unknown("delete", key, last, errors.Join(lastErr, err))
		}
		f, err := send()
		switch {
		case err == nil:
			return nil
		case r.again(f.Kind):
			last, lastErr = f, r.next(lastErr, err)
		case conditional && f.Kind == store.ErrConflict:
			return r.unknown("delete", key, f, errors.Join(lastErr, err))
		default:
			return r.Err("delete", key, f, err)
		}
	}
	return r.unknown("delete", key, last, fmt.Errorf("unresolved after %d resends: %w", r.Attempts, lastErr))
}
