package s3model

import (
	"context"
	"fmt"
)

// SSEAES256 is SSE-S3, the one server-side encryption implemented: bodies
// sealed under the server's master key (server/internal/s3api/ssecrypt).
const SSEAES256 = "AES256"

// sseKeyRecord is the s3k key of the master key's ID.
var sseKeyRecord = []byte("master")

// UseMasterKey tells the model the ID of the master key that seals new
// bodies. The first write of a sealed body records it (s3k); when a
// recorded ID differs, UseMasterKey refuses, so that a server started with
// another key than the one its objects were sealed under fails at start
// instead of answering reads with errors. A data directory without sealed
// bodies accepts any key. Call it before serving.
func (m *Model) UseMasterKey(id string) error {
	var stored string
	err := m.view(func(s *records) error {
		if b := s.read(tblSSE); b != nil {
			stored = string(b.Get(sseKeyRecord))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if stored != "" && stored != id {
		return fmt.Errorf("s3model: objects in this data directory are encrypted under SSE master key %s, "+
			"but the key given has ID %s: start the server with the original key (--sse-master-key-file)", stored, id)
	}
	m.keyID = id
	return nil
}

// noteKey records the master key's ID with the first sealed body (Update
// only).
func (s *records) noteKey() {
	if s.keyID == "" {
		return
	}
	if b := s.read(tblSSE); b != nil && b.Get(sseKeyRecord) != nil {
		return
	}
	mustPut(s.write(tblSSE), sseKeyRecord, []byte(s.keyID))
}

// SetEncryption sets a bucket's default encryption (SSEAES256, or "" to
// remove it): every object written afterwards without its own
// x-amz-server-side-encryption is sealed with it.
func (m *Model) SetEncryption(ctx context.Context, name, sse string) error {
	return m.updateBucket(ctx, name, func(rec *Bucket) { rec.SSE = sse })
}
