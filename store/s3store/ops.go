package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// Get returns the key's value and version (a legacy header stripped).
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: s.object(key)})
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	defer out.Body.Close()
	obj, err := io.ReadAll(out.Body)
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	return store.Entry{Key: key, Value: decodeValue(obj, out.Metadata[metaNonce]), Version: quoteETag(out.ETag)}, nil
}

// Put writes value under key, as is, if cond holds; see the package doc
// for the nonce and how ambiguous outcomes are resolved.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	return s.put(ctx, key, newNonce(), func() io.ReadSeeker { return bytes.NewReader(value) }, cond)
}

// put sends one conditional PutObject and resolves an unknown outcome.
// body returns the stored bytes from the start, once per attempt.
func (s *Store) put(ctx context.Context, key, nonce string, body func() io.ReadSeeker, cond store.Condition) (store.Version, error) {
	in := &s3.PutObjectInput{
		Bucket:   &s.bucket,
		Key:      s.object(key),
		Metadata: map[string]string{metaNonce: nonce},
	}
	kind := resolve.OpWrite
	switch {
	case cond.IsAbsent():
		in.IfNoneMatch = aws.String("*")
		kind = resolve.OpCondPut
	default:
		if v, ok := cond.Match(); ok {
			if v == "" {
				return "", store.NewOpError(backend, "put", key, store.ErrConflict, errors.New("IfMatch of the zero version"))
			}
			in.IfMatch = aws.String(string(v))
			kind = resolve.OpCondPut
		}
	}
	send := func() (store.Version, resolve.Failure, error) {
		in.Body = body()
		out, err := s.client.PutObject(ctx, in, noRetry)
		if err != nil {
			return "", classify(kind, err), err
		}
		return quoteETag(out.ETag), resolve.Failure{}, nil
	}
	_, ifMatch := cond.Match()
	return s.res.SendPut(ctx, key, nonce, ifMatch, send)
}

// Delete removes key if cond holds.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := s.check(ctx, "delete", key, false); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("delete if-absent"))
	}
	in := &s3.DeleteObjectInput{Bucket: &s.bucket, Key: s.object(key)}
	kind := resolve.OpWrite
	if v, ok := cond.Match(); ok {
		if s.noCAD {
			return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("conditional delete is not AWS-exact on this server (Options.NoCompareAndDelete)"))
		}
		if v == "" {
			return store.NewOpError(backend, "delete", key, store.ErrConflict, errors.New("IfMatch of the zero version"))
		}
		in.IfMatch = aws.String(string(v))
		kind = resolve.OpCondDelete
	}
	send := func() (resolve.Failure, error) {
		_, err := s.client.DeleteObject(ctx, in, noRetry)
		if err != nil {
			f := classify(kind, err)
			if kind == resolve.OpWrite && f.Kind == store.ErrNotFound && f.Code != "NoSuchBucket" {
				return resolve.Failure{}, nil // an unconditional delete of a missing key succeeds
			}
			return f, err
		}
		return resolve.Failure{}, nil
	}
	return s.res.SendDelete(ctx, key, kind.Conditional(), send)
}

// List returns one page of keys under prefix, in byte order.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	o := opts.Bounded(1000, 1000) // S3's page size
	limit := o.Limit
	in := &s3.ListObjectsV2Input{
		Bucket:  &s.bucket,
		Prefix:  aws.String(s.prefix + prefix),
		MaxKeys: aws.Int32(int32(limit)),
	}
	if o.After != "" {
		in.StartAfter = aws.String(s.prefix + o.After)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
	}
	page := store.Page{Items: make([]store.Item, 0, len(out.Contents))}
	for _, obj := range out.Contents {
		if obj.Key == nil || len(*obj.Key) < len(s.prefix) {
			continue
		}
		page.Items = append(page.Items, store.Item{Key: (*obj.Key)[len(s.prefix):], Version: quoteETag(obj.ETag)})
	}
	if aws.ToBool(out.IsTruncated) && len(page.Items) > 0 {
		page.Next = page.Items[len(page.Items)-1].Key
	}
	return page, nil
}
