package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// resolvePut decides the outcome of a Put whose first attempt ended
// without an answer (DESIGN.md §1, spec §8): read the key; our nonce there
// means we won. Otherwise resend the same write — same nonce, same
// condition — so that at most one attempt commits: a 200 is a win, and
// after a 412/409/404 another read finds either our nonce (won) or not
// (ErrUnknownOutcome: the earlier attempt may have committed and been
// superseded).
func (s *Store) resolvePut(ctx context.Context, key, nonce string, send func() (store.Version, failure, error), last failure, lastErr error) (store.Version, error) {
	for n := 0; n < s.attempts; n++ {
		if err := s.pause(ctx, n); err != nil {
			return "", unknown("put", key, last, errors.Join(lastErr, err))
		}
		if v, ok, err := s.nonceOf(ctx, key); err == nil && ok && v.nonce == nonce {
			return v.version, nil
		}
		v, f, err := send()
		if err == nil {
			return v, nil
		}
		if f.kind == store.ErrUnknownOutcome {
			last, lastErr = f, err
			continue
		}
		cur, ok, rerr := s.nonceOf(ctx, key)
		switch {
		case rerr != nil:
			return "", unknown("put", key, f, errors.Join(lastErr, err, rerr))
		case ok && cur.nonce == nonce:
			return cur.version, nil // an earlier attempt won; this resend saw our own object
		default:
			// Someone else's object, or none. An earlier attempt may still
			// have committed and been overwritten or deleted since: without
			// the key's history that cannot be ruled out, so the answer is
			// unknown, not a conflict (a caller that took it for "nothing
			// changed" could apply its update twice). The resend's own
			// status stays in the error.
			return "", unknown("put", key, f, errors.Join(lastErr, err))
		}
	}
	return "", unknown("put", key, last, fmt.Errorf("unresolved after %d resends: %w", s.attempts, lastErr))
}

// resolveDelete resends a delete whose outcome is unknown. An
// unconditional delete is idempotent. A conditional one that now fails its
// condition may have been the attempt that removed the version, so that
// answer stays unknown.
func (s *Store) resolveDelete(ctx context.Context, key string, kind opKind, send func() (failure, error), last failure, lastErr error) error {
	for n := 0; n < s.attempts; n++ {
		if err := s.pause(ctx, n); err != nil {
			return unknown("delete", key, last, errors.Join(lastErr, err))
		}
		f, err := send()
		switch {
		case err == nil:
			return nil
		case f.kind == store.ErrUnknownOutcome:
			last, lastErr = f, err
		case kind == opCondWrite && f.kind == store.ErrConflict:
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

// nonceOf reads which write the key currently holds: the nonce from the
// object's metadata, or from its header line when a server drops user
// metadata. ok is false when the key is absent.
func (s *Store) nonceOf(ctx context.Context, key string) (stored, bool, error) {
	h, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: s.object(key)})
	if err != nil {
		if f := classify(opRead, err); f.kind == store.ErrNotFound {
			return stored{}, false, nil
		}
		return stored{}, false, err
	}
	if n := h.Metadata[metaNonce]; n != "" {
		return stored{nonce: n, version: quoteETag(h.ETag)}, true, nil
	}
	g, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: s.object(key),
		Range: aws.String(fmt.Sprintf("bytes=0-%d", headerLen-1))})
	if err != nil {
		if f := classify(opRead, err); f.kind == store.ErrNotFound {
			return stored{}, false, nil
		}
		return stored{}, false, err
	}
	defer g.Body.Close()
	b, err := io.ReadAll(io.LimitReader(g.Body, int64(headerLen)))
	if err != nil {
		return stored{}, false, err
	}
	n, _ := parseHeader(b)
	return stored{nonce: n, version: quoteETag(g.ETag)}, true, nil
}
