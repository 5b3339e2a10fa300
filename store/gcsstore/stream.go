package gcsstore

import (
	"context"
	"io"

	"github.com/latchkey/latchkey/store"
)

// PutStream is Put with the value read from r, streamed in one upload
// request with no chunk buffer: memory stays bounded whatever the size.
// The generation precondition is checked when the upload completes. An
// io.ReadSeeker can be sent again to resolve an unknown outcome; any other
// reader cannot, so such an outcome is resolved by reading the object's
// nonce only, and stays ErrUnknownOutcome when that does not show a win.
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	if err := s.check("put", key, false); err != nil {
		return "", err
	}
	rs, seekable := r.(io.ReadSeeker)
	var start int64
	if seekable {
		var err error
		if start, err = rs.Seek(0, io.SeekCurrent); err != nil {
			seekable = false
		}
	}
	sent := false
	return s.put(ctx, key, func() (io.Reader, bool) {
		if !sent {
			sent = true
			return r, true
		}
		if !seekable {
			return nil, false
		}
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
	if err := s.check("get", key, false); err != nil {
		return nil, "", err
	}
	r, err := s.object(key).NewReader(ctx)
	if err != nil {
		return nil, "", opError("get", key, classify(opRead, err), err)
	}
	return r, version(r.Attrs.Generation), nil
}
