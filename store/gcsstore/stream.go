package gcsstore

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// PutStream is Put with the value read from r, sent in one upload request
// with no chunk buffer, so memory stays bounded whatever the size. The
// generation precondition is checked when the upload completes. An
// io.ReadSeeker is sent as is (from its current offset) and can be sent
// again to resolve an unknown outcome; any other reader is first spooled
// to a temporary file, so that a reader failing part-way fails the Put
// before anything is sent (ErrTransient, nothing stored).
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		f, err := os.CreateTemp("", "gcsstore-spool-*")
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
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("seek value: %w", err))
	}
	return s.put(ctx, key, func() (io.Reader, bool) {
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return nil, false
		}
		return rs, true
	}, cond)
}

// GetStream returns a reader of the key's value and its generation. The
// client pins the generation it first read, so the reader yields exactly
// that version's bytes.
func (s *Store) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return nil, "", err
	}
	r, err := s.object(key).NewReader(ctx)
	if err != nil {
		return nil, "", opError("get", key, classify(resolve.OpRead, err), err)
	}
	return r, version(r.Attrs.Generation), nil
}
