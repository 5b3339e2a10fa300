package gcsstore

import (
	"context"
	"net/url"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// resolver resolves this store's writes with the shared logic of
// store/internal/resolve.
func (s *Store) resolver() *resolve.Resolver {
	return &resolve.Resolver{
		Attempts: s.attempts, Backoff: s.backoff,
		Err:  opError,
		Look: s.nonceOf,
		// A resend's 429/5xx or transport resolve.Failure is resent again, and
		// every resend's error stays in the cause.
		Again: func(kind error) bool {
			return kind == store.ErrUnknownOutcome || kind == store.ErrTransient
		},
		KeepCauses: true,
	}
}

// resolvePut decides the outcome of a Put whose attempt ended without an
// answer (the store/internal/resolve package doc; see
// resolve.Resolver.Put): read the object's metadata for our nonce, else
// resend the same write with the same generation precondition; a 412 or
// 404 on the resend with someone else's nonce, or none, is
// ErrUnknownOutcome, never a conflict.
func (s *Store) resolvePut(ctx context.Context, key, nonce string, ifMatch bool, send func() (store.Version, resolve.Failure, error), last resolve.Failure, lastErr error) (store.Version, error) {
	return s.resolver().Put(ctx, key, nonce, ifMatch, send, last, lastErr)
}

// resolveDelete resends a delete whose outcome is unknown (see
// resolve.Resolver.Delete): a conditional one that now fails its
// condition may have been the attempt that removed the version, so that
// answer stays unknown.
func (s *Store) resolveDelete(ctx context.Context, key string, kind resolve.OpKind, send func() (resolve.Failure, error), last resolve.Failure, lastErr error) error {
	return s.resolver().Delete(ctx, key, kind.Conditional(), send, last, lastErr)
}

// nonceOf reads which write the key's object holds: the nonce from its
// custom metadata, with its generation. ok is false when it is absent.
func (s *Store) nonceOf(ctx context.Context, key string) (resolve.Stored, bool, error) {
	var a objectMeta
	u := s.objectURL(key, url.Values{"fields": {"name,generation,metadata"}, "prettyPrint": {"false"}})
	err := reads.Do(ctx, func() error { a = objectMeta{}; return s.getJSON(ctx, u, maxMetaBody, &a) })
	if err != nil {
		if f := classify(resolve.OpRead, err); f.Kind == store.ErrNotFound {
			return resolve.Stored{}, false, nil
		}
		return resolve.Stored{}, false, err
	}
	gen, err := a.gen()
	if err != nil {
		return resolve.Stored{}, false, err
	}
	return resolve.Stored{Nonce: a.Metadata[metaNonce], Version: version(gen)}, true, nil
}
