package azblobstore

import (
	"context"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

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
