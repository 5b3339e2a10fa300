package s3api

import (
	"errors"
	"fmt"
	"io"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3model"
)

// The read helpers of the web console (server/internal/console) and of the
// engine's orphan sweep are the object model's (server/internal/s3model); they
// are re-exported here, the server's one S3 entry point.

// BucketInfo is one bucket.
type BucketInfo = s3model.BucketInfo

// ObjectVersion is one version of one key: an object or a delete marker.
type ObjectVersion = s3model.ObjectVersion

// UploadInfo is one multipart upload in progress.
type UploadInfo = s3model.UploadInfo

// ConsoleBuckets returns the buckets named after after, in name order, at
// most limit, and whether more follow.
func ConsoleBuckets(tx *engine.Tx, after string, limit int) ([]BucketInfo, bool) {
	return s3model.ConsoleBuckets(tx, after, limit)
}

// ConsoleBucket returns one bucket.
func ConsoleBucket(tx *engine.Tx, name string) (BucketInfo, bool) {
	return s3model.ConsoleBucket(tx, name)
}

// ConsoleVersions returns the versions of the keys of bucket that start
// with prefix and come after the key after, at most limit versions (see
// s3model.ConsoleVersions).
func ConsoleVersions(tx *engine.Tx, bucket, prefix, after string, limit int) ([]ObjectVersion, bool) {
	return s3model.ConsoleVersions(tx, bucket, prefix, after, limit)
}

// ConsoleUploads returns the multipart uploads in progress in bucket, at
// most limit of them.
func ConsoleUploads(tx *engine.Tx, bucket string, limit int) ([]UploadInfo, bool) {
	return s3model.ConsoleUploads(tx, bucket, limit)
}

// ConsoleCount counts the records of one S3 table ("buckets" or
// "versions"), stopping at limit.
func ConsoleCount(tx *engine.Tx, table string, limit int) (int, bool) {
	return s3model.ConsoleCount(tx, table, limit)
}

// LiveBlobs names every blob an S3 record references (object versions and
// uploaded parts), for the engine's orphan sweep at Open
// (engine.Options.LiveBlobs).
func LiveBlobs(tx *engine.Tx, live func(id string)) error { return s3model.LiveBlobs(tx, live) }

// ErrConsoleTooLarge is ConsoleObject's refusal of a body over its limit.
var ErrConsoleTooLarge = errors.New("s3api: object larger than the console reads")

// ConsoleObject returns the body of the current version of key in bucket
// as GET serves it (decrypted when it is stored sealed, SSE-S3), with its
// engine index. ok is false when the bucket or key does not exist or the
// current version is a delete marker. A body larger than limit bytes is
// not read: ErrConsoleTooLarge. It is how the console reads the lease and
// publish records of an s3:// store kept in this server's bucket.
func (h *Handler) ConsoleObject(bucket, key string, limit int64) (body []byte, index uint64, ok bool, err error) {
	for attempt := 0; ; attempt++ {
		f, err := h.m.Lookup(bucket, key, "", false)
		if errors.Is(err, s3model.ErrNoSuchBucket) || errors.Is(err, s3model.ErrNoSuchKey) {
			return nil, 0, false, nil
		}
		if err != nil {
			return nil, 0, false, err
		}
		v := f.Version
		if v.Size > limit {
			return nil, v.Index, true, fmt.Errorf("%w: %s/%s is %d bytes (at most %d)", ErrConsoleTooLarge, bucket, key, v.Size, limit)
		}
		if v.Size == 0 {
			return []byte{}, v.Index, true, nil
		}
		r, err := h.openRange(bucket, key, v, f.Data, byteRange{0, v.Size - 1})
		if errors.Is(err, errBlobGone) && attempt < 3 {
			continue // replaced between lookup and open: read again
		}
		if err != nil {
			return nil, 0, false, err
		}
		b, err := io.ReadAll(io.LimitReader(r, v.Size))
		r.Close()
		if err != nil {
			return nil, 0, false, fmt.Errorf("s3api: console read %s/%s: %w", bucket, key, err)
		}
		return b, v.Index, true, nil
	}
}
