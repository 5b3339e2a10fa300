package s3api

import (
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

// ConsoleInline returns the body of one version of key when it is stored
// inline (small objects), else false.
func ConsoleInline(tx *engine.Tx, bucket, key string, index uint64) ([]byte, bool) {
	return s3model.ConsoleInline(tx, bucket, key, index)
}

// LiveBlobs names every blob an S3 record references (object versions and
// uploaded parts), for the engine's orphan sweep at Open
// (engine.Options.LiveBlobs).
func LiveBlobs(tx *engine.Tx, live func(id string)) error { return s3model.LiveBlobs(tx, live) }
