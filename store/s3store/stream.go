package s3store

import (
	"context"
	"io"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
	"github.com/latchkey/latchkey/store/internal/spool"
)

// PutStream is Put with the value read from r. An io.ReadSeeker is sent
// as is (from its current offset to its end); any other reader is spooled
// to a temporary file first (spool.Seeker), because the request needs a
// known length and a body that can be hashed (SigV4 signs its SHA-256)
// and rewound. Nothing is held whole in memory.
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	body, _, done, err := spool.Seeker(r, backend, key)
	if err != nil {
		return "", err
	}
	defer done()
	return s.put(ctx, key, resolve.NewNonce(), func() io.ReadSeeker {
		body.Seek(0, io.SeekStart)
		return body
	}, cond)
}

// GetStream returns a reader of the key's value (a legacy header
// stripped) and its version.
func (s *Store) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return nil, "", err
	}
	out, err := s.client.getObject(ctx, s.object(key), "")
	if err != nil {
		return nil, "", opError("get", key, classify(resolve.OpRead, err), err)
	}
	r, err := stripLegacyHeader(out.body, out.nonce)
	if err != nil {
		out.body.Close()
		return nil, "", opError("get", key, classify(resolve.OpRead, err), err)
	}
	return readCloser{r, out.body}, quoteETag(out.etag), nil
}

type readCloser struct {
	io.Reader
	io.Closer
}
