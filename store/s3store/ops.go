package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// Get returns the key's value and version (a legacy header stripped).
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	out, err := s.client.getObject(ctx, s.object(key), "")
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	defer out.body.Close()
	obj, err := io.ReadAll(out.body)
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	return store.Entry{Key: key, Value: decodeValue(obj, out.nonce), Version: quoteETag(out.etag)}, nil
}

// Put writes value under key, as is, if cond holds; see the package doc
// for the nonce and how ambiguous outcomes are resolved.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	return s.put(ctx, key, resolve.NewNonce(), func() io.ReadSeeker { return bytes.NewReader(value) }, cond)
}

// put sends one conditional PutObject and resolves an unknown outcome.
// body returns the stored bytes from the start, once per attempt.
func (s *Store) put(ctx context.Context, key, nonce string, body func() io.ReadSeeker, cond store.Condition) (store.Version, error) {
	h := http.Header{}
	kind := resolve.OpWrite
	switch {
	case cond.IsAbsent():
		h.Set("If-None-Match", "*")
		kind = resolve.OpCondPut
	default:
		if v, ok := cond.Match(); ok {
			if v == "" {
				return "", store.NewOpError(backend, "put", key, store.ErrConflict, errors.New("IfMatch of the zero version"))
			}
			h.Set("If-Match", string(v))
			kind = resolve.OpCondPut
		}
	}
	return s.res.SendPut(ctx, key, nonce, kind, cond, func() (store.Version, error) {
		etag, err := s.client.putObject(ctx, s.object(key), nonce, h, body())
		return quoteETag(etag), err
	})
}

// Delete removes key if cond holds.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := s.check(ctx, "delete", key, false); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("delete if-absent"))
	}
	h := http.Header{}
	kind := resolve.OpWrite
	if v, ok := cond.Match(); ok {
		if s.noCAD {
			return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("conditional delete is not AWS-exact on this server (Options.NoCompareAndDelete)"))
		}
		if v == "" {
			return store.NewOpError(backend, "delete", key, store.ErrConflict, errors.New("IfMatch of the zero version"))
		}
		h.Set("If-Match", string(v))
		kind = resolve.OpCondDelete
	}
	return s.res.SendDelete(ctx, key, kind, func() error { return s.client.deleteObject(ctx, s.object(key), h) })
}

// List returns one page of keys under prefix, in byte order.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	o := opts.Bounded(1000, 1000) // S3's page size
	limit := o.Limit
	after := ""
	if o.After != "" {
		after = s.prefix + o.After
	}
	out, err := s.client.listObjects(ctx, s.prefix+prefix, after, limit)
	if err != nil {
		return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
	}
	page := store.Page{Items: make([]store.Item, 0, len(out.Contents))}
	for _, obj := range out.Contents {
		if !strings.HasPrefix(obj.Key, s.prefix) {
			continue
		}
		page.Items = append(page.Items, store.Item{Key: obj.Key[len(s.prefix):], Version: quoteETag(obj.ETag)})
	}
	if out.IsTruncated && len(page.Items) > 0 {
		page.Next = page.Items[len(page.Items)-1].Key
	}
	return page, nil
}
