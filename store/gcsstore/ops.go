package gcsstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// metaNonce is the custom-metadata key carrying each write's nonce.
const metaNonce = "latchkey-nonce"

// maxListPage is the largest page List asks for (the JSON API's limit).
const maxListPage = 1000

// newNonce returns a fresh random nonce as 32 hex digits.
func newNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gcsstore: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// Get returns the key's value and generation, read in one request.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	r, err := s.object(key).NewReader(ctx)
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	return store.Entry{Key: key, Value: b, Version: version(r.Attrs.Generation)}, nil
}

// Put writes value under key if cond holds.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	return s.put(ctx, key, func() (io.Reader, bool) { return bytes.NewReader(value), true }, cond)
}

// conditions turns a store condition into GCS preconditions. ok is false
// for IfMatch of a version no object can have (the write is a conflict);
// conditional is false for Unconditional.
func conditions(cond store.Condition) (c storage.Conditions, conditional, ok bool) {
	if cond.IsAbsent() {
		return storage.Conditions{DoesNotExist: true}, true, true
	}
	if v, isMatch := cond.Match(); isMatch {
		g, valid := generation(v)
		return storage.Conditions{GenerationMatch: g}, true, valid
	}
	return storage.Conditions{}, false, true
}

// put uploads the value body returns, under cond, and resolves an unknown
// outcome. body returns the value from its start once per attempt, and
// false when it cannot.
func (s *Store) put(ctx context.Context, key string, body func() (io.Reader, bool), cond store.Condition) (store.Version, error) {
	if err := ctx.Err(); err != nil {
		return "", store.NewOpError(backend, "put", key, store.ErrTransient, err) // nothing was sent
	}
	conds, conditional, ok := conditions(cond)
	if !ok {
		return "", store.NewOpError(backend, "put", key, store.ErrConflict, fmt.Errorf("%s: no object has that generation", cond))
	}
	kind := resolve.OpWrite
	if conditional {
		kind = resolve.OpCondPut
	}
	nonce := newNonce()
	first := true
	send := func() (store.Version, resolve.Failure, error) {
		r, ok := body()
		if !ok {
			if first {
				return "", resolve.Failure{Kind: store.ErrTransient}, errors.New("the value's reader cannot seek to its start")
			}
			return "", resolve.Failure{Kind: store.ErrUnknownOutcome}, errors.New("the value cannot be sent again")
		}
		first = false
		h := s.writeHandle(key)
		if conditional {
			h = h.If(conds)
		}
		return s.upload(ctx, h, nonce, r, kind)
	}
	v, f, err := send()
	if err == nil {
		return v, nil
	}
	if f.Kind != store.ErrUnknownOutcome {
		return "", opError("put", key, f, err)
	}
	_, ifMatch := cond.Match()
	return s.resolvePut(ctx, key, nonce, ifMatch, send, f, err)
}

// upload sends one object in a single request (no chunk buffer, no client
// retries) and returns its generation.
func (s *Store) upload(ctx context.Context, h *storage.ObjectHandle, nonce string, r io.Reader, kind resolve.OpKind) (store.Version, resolve.Failure, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := h.NewWriter(ctx)
	w.ChunkSize = 0
	w.ContentType = "application/octet-stream"
	w.Metadata = map[string]string{metaNonce: nonce}
	if _, err := io.Copy(w, sourceReader{r}); err != nil {
		var rerr *readError
		if errors.As(err, &rerr) {
			// The caller's reader failed mid-upload. Cancel the request
			// and do not Close the writer (that would end the body
			// normally). GCS does not finalize a multipart upload whose
			// body never completed, but a lenient server may store what
			// it got (fake-gcs-server does), so the outcome is unknown.
			// PutStream spools plain readers first, so only a failing
			// io.ReadSeeker gets here.
			cancel()
			return "", resolve.Failure{Kind: store.ErrUnknownOutcome}, fmt.Errorf("read value: %w", err)
		}
		// The upload itself failed; Close reports why.
		cerr := w.Close()
		if cerr == nil {
			cerr = err
		}
		return "", classify(kind, cerr), cerr
	}
	if err := w.Close(); err != nil {
		return "", classify(kind, err), err
	}
	return version(w.Attrs().Generation), resolve.Failure{}, nil
}

// readError marks a resolve.Failure of the caller's reader, as opposed to the
// upload's.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// sourceReader tags its reader's errors as readErrors.
type sourceReader struct{ r io.Reader }

func (sr sourceReader) Read(p []byte) (int, error) {
	n, err := sr.r.Read(p)
	if err != nil && err != io.EOF {
		err = &readError{err}
	}
	return n, err
}

// Delete removes key if cond holds.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := s.check(ctx, "delete", key, false); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("delete if-absent"))
	}
	if err := ctx.Err(); err != nil {
		return store.NewOpError(backend, "delete", key, store.ErrTransient, err) // nothing was sent
	}
	h := s.writeHandle(key)
	kind := resolve.OpWrite
	if v, ok := cond.Match(); ok {
		if s.noCAD {
			return store.NewOpError(backend, "delete", key, store.ErrUnsupported,
				errors.New("this server ignores ifGenerationMatch on DELETE (Options.NoCompareAndDelete)"))
		}
		g, valid := generation(v)
		if !valid {
			return store.NewOpError(backend, "delete", key, store.ErrConflict, fmt.Errorf("%s: no object has that generation", cond))
		}
		h = h.If(storage.Conditions{GenerationMatch: g})
		kind = resolve.OpCondDelete
	}
	send := func() (resolve.Failure, error) {
		err := h.Delete(ctx)
		if err == nil {
			return resolve.Failure{}, nil
		}
		f := classify(kind, err)
		if kind == resolve.OpWrite && f.Kind == store.ErrNotFound && !errors.Is(err, storage.ErrBucketNotExist) {
			return resolve.Failure{}, nil // an unconditional delete of a missing key succeeds
		}
		return f, err
	}
	f, err := send()
	if err == nil {
		return nil
	}
	if f.Kind != store.ErrUnknownOutcome {
		return opError("delete", key, f, err)
	}
	return s.resolveDelete(ctx, key, kind, send, f, err)
}

// List returns one page of keys under prefix, in byte order, with their
// generations.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	var o store.ListOptions
	if opts != nil {
		o = *opts
	}
	limit := o.Limit
	if limit <= 0 || limit > maxListPage {
		limit = maxListPage
	}
	q := &storage.Query{Prefix: s.prefix + prefix}
	if o.After != "" {
		// StartOffset is inclusive; the smallest name after After is
		// After followed by a NUL byte.
		q.StartOffset = s.prefix + o.After + "\x00"
	}
	if err := q.SetAttrSelection([]string{"Name", "Generation"}); err != nil {
		return store.Page{}, store.NewOpError(backend, "list", prefix, store.ErrUnsupported, err)
	}
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = limit + 1
	page := store.Page{Items: make([]store.Item, 0, min(limit, 100))}
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return page, nil
		}
		if err != nil {
			return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
		}
		if len(a.Name) < len(s.prefix) || a.Name[:len(s.prefix)] != s.prefix {
			continue
		}
		if len(page.Items) == limit {
			page.Next = page.Items[limit-1].Key
			return page, nil
		}
		page.Items = append(page.Items, store.Item{Key: a.Name[len(s.prefix):], Version: version(a.Generation)})
	}
}
