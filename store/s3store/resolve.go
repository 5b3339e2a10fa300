package s3store

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// nonceOf reads which write the key currently holds: the nonce from the
// object's metadata or, when there is none (a server that drops user
// metadata, with an object of the legacy format), from its legacy header
// line. ok is false when the key is absent.
func (s *Store) nonceOf(ctx context.Context, key string) (resolve.Stored, bool, error) {
	h, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: s.object(key)})
	if err != nil {
		if f := classify(resolve.OpRead, err); f.Kind == store.ErrNotFound {
			return resolve.Stored{}, false, nil
		}
		return resolve.Stored{}, false, err
	}
	if n := h.Metadata[metaNonce]; n != "" {
		return resolve.Stored{Nonce: n, Version: quoteETag(h.ETag)}, true, nil
	}
	g, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: s.object(key),
		Range: aws.String(fmt.Sprintf("bytes=0-%d", legacyHeaderLen-1))})
	if err != nil {
		if f := classify(resolve.OpRead, err); f.Kind == store.ErrNotFound {
			return resolve.Stored{}, false, nil
		}
		return resolve.Stored{}, false, err
	}
	defer g.Body.Close()
	b, err := io.ReadAll(io.LimitReader(g.Body, int64(legacyHeaderLen)))
	if err != nil {
		return resolve.Stored{}, false, err
	}
	n, _ := parseLegacyHeader(b)
	return resolve.Stored{Nonce: n, Version: quoteETag(g.ETag)}, true, nil
}
