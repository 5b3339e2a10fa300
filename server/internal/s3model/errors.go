package s3model

import (
	"errors"
	"fmt"
)

// The refusals of the model. An operation returns them wrapped in *Error,
// which names what was missing; the S3 handler turns them into S3's error
// responses.
var (
	// ErrNoSuchBucket: the bucket does not exist.
	ErrNoSuchBucket = errors.New("no such bucket")
	// ErrNoSuchKey: the key has no current version, or it is a delete
	// marker (Error.Marker is then set).
	ErrNoSuchKey = errors.New("no such key")
	// ErrNoSuchVersion: the key has no version of that ID.
	ErrNoSuchVersion = errors.New("no such version")
	// ErrDeleteMarker: the version addressed by ID is a delete marker
	// (Error.Marker).
	ErrDeleteMarker = errors.New("version is a delete marker")
	// ErrNoSuchUpload: the multipart upload does not exist.
	ErrNoSuchUpload = errors.New("no such upload")
	// ErrBucketExists: CreateBucket of an existing bucket.
	ErrBucketExists = errors.New("bucket exists")
	// ErrBucketNotEmpty: DeleteBucket of a bucket that holds versions.
	ErrBucketNotEmpty = errors.New("bucket not empty")
)

// Error is a refusal of the model: Err is one of the Err* values, the
// other fields name what it concerns.
type Error struct {
	Err       error
	Bucket    string
	Key       string
	VersionID string
	UploadID  string
	// Marker is the delete marker of ErrDeleteMarker and of ErrNoSuchKey
	// when the current version is one.
	Marker *Version
}

// Error names the bucket and key and the refusal.
func (e *Error) Error() string {
	return fmt.Sprintf("s3model: %s/%s: %v", e.Bucket, e.Key, e.Err)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

func noSuchBucket(bucket string) error { return &Error{Err: ErrNoSuchBucket, Bucket: bucket} }

func noSuchUpload(bucket, key, id string) error {
	return &Error{Err: ErrNoSuchUpload, Bucket: bucket, Key: key, UploadID: id}
}
