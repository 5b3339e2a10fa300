package s3store

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// PutStream is Put with the value read from r. An io.ReadSeeker is sent
// as is (from its current offset); any other reader is spooled to a
// temporary file first, because the request needs a known length and a
// body that can be hashed (SigV4 signs its SHA-256) and rewound. Nothing is held whole in memory.
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	nonce := newNonce()
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		f, err := os.CreateTemp("", "s3store-spool-*")
		if err != nil {
			return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("spool value: %w", err))
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if _, err := io.Copy(f, r); err != nil {
			return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("spool value: %w", err))
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("spool value: %w", err))
		}
		rs = f
	}
	body, err := newOffsetSeeker(rs)
	if err != nil {
		return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("seek value: %w", err))
	}
	return s.put(ctx, key, nonce, func() io.ReadSeeker {
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
