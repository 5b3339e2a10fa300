package s3model

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Multipart uploads: the upload record snapshots the key's last-mutation
// index at create (the 409 rule: docs/wire-s3.md, "Concurrent writes");
// parts are blobs; Complete publishes a version whose segments are the
// chosen parts' blobs, so no byte is copied.

// uploadWatch is the engine watch name of one upload.
func uploadWatch(id string) string { return "\x00s3u/" + id }

func (s *records) upload(bucket, key, id string) (Upload, bool, error) {
	return getRecord[Upload](s.read(tblUploads), uploadKey(bucket, key, id))
}

func (s *records) mustUpload(bucket, key, id string) (Upload, error) {
	if _, err := s.mustBucket(bucket); err != nil {
		return Upload{}, err
	}
	rec, ok, err := s.upload(bucket, key, id)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, noSuchUpload(bucket, key, id)
	}
	return rec, nil
}

// PartEntry is one uploaded part and its number.
type PartEntry struct {
	Number int
	Part
}

// parts returns the parts of an upload in part-number order.
func (s *records) parts(id string) ([]PartEntry, error) {
	b := s.read(tblParts)
	if b == nil {
		return nil, nil
	}
	p := []byte(id + "/")
	var out []PartEntry
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		rec, err := decode[Part](v)
		if err != nil {
			return nil, err
		}
		n := int(k[len(p)])<<24 | int(k[len(p)+1])<<16 | int(k[len(p)+2])<<8 | int(k[len(p)+3])
		out = append(out, PartEntry{Number: n, Part: rec})
	}
	return out, nil
}

// dropUpload deletes an upload and its part records; it returns the
// part blobs not in keep.
func (s *records) dropUpload(bucket, key, id string, keep map[string]bool) ([]string, error) {
	parts, err := s.parts(id)
	if err != nil {
		return nil, err
	}
	var blobs []string
	pb := s.write(tblParts)
	for _, p := range parts {
		mustDelete(pb, partKey(id, p.Number))
		if !keep[p.Blob] {
			blobs = append(blobs, p.Blob)
		}
	}
	mustDelete(s.write(tblUploads), uploadKey(bucket, key, id))
	s.tx.Touch(uploadWatch(id))
	return blobs, nil
}

// dropUploads aborts every upload of a bucket.
func (s *records) dropUploads(bucket string) ([]string, error) {
	b := s.read(tblUploads)
	if b == nil {
		return nil, nil
	}
	type up struct{ key, id string }
	var ups []up
	bp := bucketPrefix(bucket)
	c := b.Cursor()
	for k, _ := c.Seek(bp); k != nil && bytes.HasPrefix(k, bp); k, _ = c.Next() {
		if key, id, ok := strings.Cut(string(k[len(bp):]), "\x00"); ok {
			ups = append(ups, up{key, id})
		}
	}
	var blobs []string
	for _, u := range ups {
		bl, err := s.dropUpload(bucket, u.key, u.id, nil)
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, bl...)
	}
	return blobs, nil
}

// CreateUpload records a new multipart upload of bucket/key and returns
// its ID. up.Initiated and up.Snapshot are set here.
func (m *Model) CreateUpload(ctx context.Context, bucket, key string, up Upload) (string, error) {
	var id string
	err := m.update(ctx, func(s *records) error {
		if _, err := s.mustBucket(bucket); err != nil {
			return err
		}
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		id = fmt.Sprintf("%016x%s", s.tx.Index(), hex.EncodeToString(rnd[:]))
		up.Initiated, up.Snapshot = time.Now().UnixNano(), s.mod(bucket, key)
		mustPut(s.write(tblUploads), uploadKey(bucket, key, id), mustJSON(up))
		s.tx.Touch(uploadWatch(id))
		return nil
	})
	return id, err
}

// Upload returns an upload in progress (ErrNoSuchBucket, ErrNoSuchUpload).
func (m *Model) Upload(bucket, key, id string) (Upload, error) {
	var up Upload
	err := m.view(func(s *records) error {
		var err error
		up, err = s.mustUpload(bucket, key, id)
		return err
	})
	return up, err
}

// Parts returns an upload in progress and its parts in part-number order.
func (m *Model) Parts(bucket, key, id string) (Upload, []PartEntry, error) {
	var (
		up    Upload
		parts []PartEntry
	)
	err := m.view(func(s *records) error {
		var err error
		if up, err = s.mustUpload(bucket, key, id); err != nil {
			return err
		}
		parts, err = s.parts(id)
		return err
	})
	return up, parts, err
}

// PutPart records part n of an upload (replacing an earlier upload of the
// same number, whose blob is removed after the commit). p.Modified is set
// here.
func (m *Model) PutPart(ctx context.Context, bucket, key, id string, n int, p Part) error {
	return m.updateDropping(ctx, func(s *records) (dropped []string, err error) {
		up, err := s.mustUpload(bucket, key, id)
		if err != nil {
			return nil, err
		}
		if up.SSE != "" {
			s.noteKey()
		}
		if pb := s.read(tblParts); pb != nil {
			if old := pb.Get(partKey(id, n)); old != nil {
				if o, err := decode[Part](old); err == nil {
					dropped = []string{o.Blob}
				}
			}
		}
		p.Modified = time.Now().UnixNano()
		mustPut(s.write(tblParts), partKey(id, n), mustJSON(p))
		s.tx.Touch(uploadWatch(id))
		return dropped, nil
	})
}

// AbortUpload deletes an upload and its parts.
func (m *Model) AbortUpload(ctx context.Context, bucket, key, id string) error {
	return m.updateDropping(ctx, func(s *records) (dropped []string, err error) {
		if _, err := s.mustUpload(bucket, key, id); err != nil {
			return nil, err
		}
		if dropped, err = s.dropUpload(bucket, key, id, nil); err != nil {
			return nil, err
		}
		s.tidyMod(bucket, key)
		return dropped, nil
	})
}
