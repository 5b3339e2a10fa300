package azblobstore

import (
	"context"

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
	}
}

// resolvePut decides the outcome of a write whose first attempt ended
// without an answer (the store/internal/resolve package doc; see
// resolve.Resolver.Put):
// read the blob's properties for our nonce, else resend the same write;
// a 409/412/404 on the resend with someone else's nonce, or none, is
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

// nonceOf reads which write the blob currently holds, from its metadata.
// ok is false when the blob is absent.
func (s *Store) nonceOf(ctx context.Context, key string) (resolve.Stored, bool, error) {
	p, err := s.read.NewBlobClient(s.blob(key)).GetProperties(ctx, nil)
	if err != nil {
		if f := classify(resolve.OpRead, err); f.Kind == store.ErrNotFound {
			return resolve.Stored{}, false, nil
		}
		return resolve.Stored{}, false, err
	}
	return resolve.Stored{Nonce: nonceIn(p.Metadata), Version: quoteETag(p.ETag)}, true, nil
}
