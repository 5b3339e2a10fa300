package azblobstore

import (
	"context"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// resolver resolves this store's writes with the shared logic of
// store/internal/resolve (its package doc): a write whose first attempt
// ended without an answer reads the blob's properties for our nonce, else
// resends the same write, and a 409/412/404 on the resend with someone
// else's nonce, or none, is ErrUnknownOutcome, never a conflict; a
// conditional delete that now fails its condition may have been the
// attempt that removed the version, so that answer stays unknown.
func (s *Store) resolver() *resolve.Resolver {
	return &resolve.Resolver{
		Attempts: s.attempts, Backoff: s.backoff,
		Err:  opError,
		Look: s.nonceOf,
	}
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
