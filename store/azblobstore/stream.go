package azblobstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// blockSize is the size of one staged block of a streamed value, and so
// the memory one PutStream holds. A value that fits in one block is sent
// as a single Put Blob.
const blockSize = 4 << 20

// maxBlocks is Azure's limit on the blocks of one blob.
const maxBlocks = 50000

// PutStream is Put with the value read from r, holding at most one block
// (4 MiB) in memory. A longer value is staged as uncommitted blocks (Put
// Block, retried by the SDK: staging changes nothing visible) and
// published by one Put Block List carrying the condition, which Azure
// checks atomically with the commit. A failed PutStream leaves no visible
// change; its uncommitted blocks are discarded by Azure (after a week at
// most, or at the blob's next commit).
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	buf := make([]byte, blockSize)
	n, err := io.ReadFull(r, buf)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return s.putBytes(ctx, key, buf[:n], cond)
	case nil:
	default:
		return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("read value: %w", err))
	}
	ac, kind, err := conditions("put", key, cond)
	if err != nil {
		return "", err
	}
	nonce := resolve.NewNonce()
	stage := s.read.NewBlockBlobClient(s.blob(key))
	var ids []string
	for n > 0 {
		if len(ids) == maxBlocks {
			return "", store.NewOpError(backend, "put", key, store.ErrUnsupported, fmt.Errorf("value longer than %d blocks of %d bytes", maxBlocks, blockSize))
		}
		id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%08d", nonce, len(ids)))
		if _, err := stage.StageBlock(ctx, id, nopCloser{bytes.NewReader(buf[:n])}, nil); err != nil {
			f := classify(resolve.OpRead, err) // nothing visible changed
			return "", opError("put", key, f, err)
		}
		ids = append(ids, id)
		n, err = io.ReadFull(r, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return "", store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("read value: %w", err))
		}
	}
	commit := s.write.NewBlockBlobClient(s.blob(key))
	return s.res.SendPut(ctx, key, nonce, kind, cond, func() (store.Version, error) {
		out, err := commit.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{
			AccessConditions: ac,
			Metadata:         map[string]*string{metaNonce: &nonce},
		})
		return quoteETag(out.ETag), err
	})
}

// GetStream returns a reader of the key's value and its version. The SDK
// resumes an interrupted download with If-Match on that version, so the
// reader yields exactly the bytes of the returned version (or an error).
func (s *Store) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return nil, "", err
	}
	out, err := s.read.NewBlobClient(s.blob(key)).DownloadStream(ctx, nil)
	if err != nil {
		return nil, "", opError("get", key, classify(resolve.OpRead, err), err)
	}
	return out.Body, quoteETag(out.ETag), nil
}
