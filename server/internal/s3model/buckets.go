package s3model

import (
	"bytes"
	"context"
	"time"
)

// BucketEntry is one bucket of Buckets.
type BucketEntry struct {
	Name string
	Bucket
}

// Buckets returns every bucket, in name order.
func (m *Model) Buckets() ([]BucketEntry, error) {
	var out []BucketEntry
	err := m.view(func(s *records) error {
		out = nil
		b := s.read(tblBuckets)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			rec, err := decode[Bucket](v)
			if err != nil {
				return err
			}
			out = append(out, BucketEntry{Name: string(k), Bucket: rec})
			return nil
		})
	})
	return out, err
}

// Bucket returns one bucket's record, or ErrNoSuchBucket.
func (m *Model) Bucket(name string) (Bucket, error) {
	var rec Bucket
	err := m.view(func(s *records) error {
		var err error
		rec, err = s.mustBucket(name)
		return err
	})
	return rec, err
}

// CreateBucket creates an empty, unversioned bucket; ErrBucketExists when
// it exists.
func (m *Model) CreateBucket(ctx context.Context, name string) error {
	now := time.Now()
	return m.update(ctx, func(s *records) error {
		if _, ok, err := s.bucket(name); err != nil {
			return err
		} else if ok {
			return &Error{Err: ErrBucketExists, Bucket: name}
		}
		s.putBucket(name, Bucket{Created: now.UnixNano()})
		return nil
	})
}

// SetVersioning sets a bucket's versioning state (VersioningEnabled or
// VersioningSuspended).
func (m *Model) SetVersioning(ctx context.Context, name, state string) error {
	return m.updateBucket(ctx, name, func(rec *Bucket) { rec.Versioning = state })
}

// updateBucket applies set to bucket name's record (ErrNoSuchBucket when
// there is none) in one engine Update.
func (m *Model) updateBucket(ctx context.Context, name string, set func(*Bucket)) error {
	return m.update(ctx, func(s *records) error {
		rec, err := s.mustBucket(name)
		if err != nil {
			return err
		}
		set(&rec)
		s.putBucket(name, rec)
		return nil
	})
}

// DeleteBucket removes an empty bucket (ErrBucketNotEmpty otherwise).
// Versions and delete markers make a bucket non-empty; in-progress
// multipart uploads are aborted with it.
func (m *Model) DeleteBucket(ctx context.Context, name string) error {
	return m.updateDropping(ctx, func(s *records) (dropped []string, err error) {
		if _, err := s.mustBucket(name); err != nil {
			return nil, err
		}
		bp := bucketPrefix(name)
		if vb := s.read(tblVersions); vb != nil {
			if k, _ := vb.Cursor().Seek(bp); k != nil && bytes.HasPrefix(k, bp) {
				return nil, &Error{Err: ErrBucketNotEmpty, Bucket: name}
			}
		}
		if dropped, err = s.dropUploads(name); err != nil {
			return nil, err
		}
		mustDelete(s.write(tblBuckets), []byte(name))
		mb := s.write(tblMod)
		c := mb.Cursor()
		for k, _ := c.Seek(bp); k != nil && bytes.HasPrefix(k, bp); k, _ = c.Seek(bp) {
			mustDelete(mb, k)
		}
		s.tx.Touch(bucketWatch(name))
		return dropped, nil
	})
}
