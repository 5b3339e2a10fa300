package s3store

import (
	"context"
	"fmt"
	"io"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// nonceOf reads which write the key currently holds: the nonce from the
// object's metadata or, when there is none (a server that drops user
// metadata, with an object of the legacy format), from its legacy header
// line. ok is false when the key is absent.
func (s *Store) nonceOf(ctx context.Context, key string) (resolve.Stored, bool, error) {
	h, err := s.client.headObject(ctx, s.object(key))
	if err != nil {
		if f := classify(resolve.OpRead, err); f.Kind == store.ErrNotFound {
			return resolve.Stored{}, false, nil
		}
		return resolve.Stored{}, false, err
	}
	if h.nonce != "" {
		return resolve.Stored{Nonce: h.nonce, Version: quoteETag(h.etag)}, true, nil
	}
	g, err := s.client.getObject(ctx, s.object(key), fmt.Sprintf("bytes=0-%d", legacyHeaderLen-1))
	if err != nil {
		if f := classify(resolve.OpRead, err); f.Kind == store.ErrNotFound {
			return resolve.Stored{}, false, nil
		}
		return resolve.Stored{}, false, err
	}
	defer g.body.Close()
	b, err := io.ReadAll(io.LimitReader(g.body, int64(legacyHeaderLen)))
	if err != nil {
		return resolve.Stored{}, false, err
	}
	n, _ := parseLegacyHeader(b)
	return resolve.Stored{Nonce: n, Version: quoteETag(g.etag)}, true, nil
}
