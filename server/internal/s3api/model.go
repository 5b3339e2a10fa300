package s3api

import (
	"errors"
	"net/http"

	"github.com/latchkey/latchkey/server/internal/s3model"
)

// The handler is an adapter over the object model (server/internal/s3model): the
// pure decisions of cond.go become the model's Check functions, and the
// model's refusals become S3's errors here.

// decide is c as the model's precondition check of a write on key;
// snapshot as in check. The unconditional write needs none (nil).
func (c writeCond) decide(key string, snapshot *uint64) s3model.Check {
	if !c.conditional() {
		return nil
	}
	return func(st s3model.State) error {
		if e := c.check(key, st, snapshot); e != nil {
			return e
		}
		return nil
	}
}

// decide is c as the model's check of a delete of key's current version.
func (c deleteCond) decide(key string) s3model.Check {
	if c.IfMatch == "" {
		return nil
	}
	return func(st s3model.State) error {
		if e := c.check(key, st); e != nil {
			return e
		}
		return nil
	}
}

// beginConditional registers a conditional write on the request's key; the
// returned func ends it. Unconditional writes never answer 409 and need no
// registration.
func (h *Handler) beginConditional(q *request, cond writeCond) func() {
	if !cond.conditional() {
		return func() {}
	}
	return h.m.BeginConditional(q.ctx, q.bucket, q.key)
}

// modelError turns the model's refusals into S3's errors (method names
// the request's method, for a delete marker addressed by version ID);
// other errors pass through.
func modelError(err error, method string) error {
	var me *s3model.Error
	if !errors.As(err, &me) {
		return err
	}
	switch me.Err {
	case s3model.ErrNoSuchBucket:
		return errNoSuchBucket(me.Bucket)
	case s3model.ErrNoSuchVersion:
		return errNoSuchVersion(me.Key, me.VersionID)
	case s3model.ErrNoSuchUpload:
		return errNoSuchUpload(me.UploadID)
	case s3model.ErrBucketNotEmpty:
		return errBucketNotEmpty(me.Bucket)
	case s3model.ErrBucketExists:
		return errBucketOwned(me.Bucket)
	case s3model.ErrDeleteMarker:
		e := errMethodNotAllowed(method, "DeleteMarker")
		e.withHeader("x-amz-delete-marker", "true")
		e.withHeader("Last-Modified", me.Marker.ModTime().Format(http.TimeFormat))
		e.withHeader("x-amz-version-id", me.Marker.VersionID)
		return e
	case s3model.ErrNoSuchKey:
		e := errNoSuchKey(me.Key)
		if me.Marker != nil {
			e.withHeader("x-amz-delete-marker", "true")
			e.withHeader("x-amz-version-id", me.Marker.VersionID)
		}
		return e
	}
	return err
}
