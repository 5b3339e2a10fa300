package gcsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// metaNonce is the custom-metadata key carrying each write's nonce.
const metaNonce = "latchkey-nonce"

// maxListPage is the largest page List asks for (the JSON API's limit).
// maxListRequests bounds the requests of one List call: GCS may answer a
// page with fewer names than asked, even none, and a next-page token.
const (
	maxListPage     = 1000
	maxListRequests = 64
)

// Get returns the key's value and generation, read in one request
// (retried as a whole while it fails transiently).
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	var e store.Entry
	err := reads.Do(ctx, func() error {
		r, gen, err := s.openObject(ctx, key)
		if err != nil {
			return err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		e = store.Entry{Key: key, Value: b, Version: version(gen)}
		return nil
	})
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	return e, nil
}

// Put writes value under key if cond holds.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	return s.put(ctx, key, func() (io.Reader, int64, bool) { return bytes.NewReader(value), int64(len(value)), true }, cond)
}

// conditions turns a store condition into the ifGenerationMatch a write
// carries (0: the object must not exist). ok is false for IfMatch of a
// version no object can have (the write is a conflict); conditional is
// false for Unconditional.
func conditions(cond store.Condition) (match int64, conditional, ok bool) {
	if cond.IsAbsent() {
		return 0, true, true
	}
	if v, isMatch := cond.Match(); isMatch {
		g, valid := generation(v)
		return g, true, valid
	}
	return 0, false, true
}

// put uploads the value body returns, under cond, and resolves an unknown
// outcome. body returns the value from its start, and its length, once
// per attempt, and false when it cannot.
func (s *Store) put(ctx context.Context, key string, body func() (io.Reader, int64, bool), cond store.Condition) (store.Version, error) {
	if err := ctx.Err(); err != nil {
		return "", store.NewOpError(backend, "put", key, store.ErrTransient, err) // nothing was sent
	}
	match, conditional, ok := conditions(cond)
	if !ok {
		return "", store.NewOpError(backend, "put", key, store.ErrConflict, fmt.Errorf("%s: no object has that generation", cond))
	}
	q := url.Values{"uploadType": {"multipart"}, "alt": {"json"}, "prettyPrint": {"false"}}
	kind := resolve.OpWrite
	if conditional {
		kind = resolve.OpCondPut
		q.Set("ifGenerationMatch", strconv.FormatInt(match, 10))
	}
	u := s.upload + "b/" + escape(s.name) + "/o?" + q.Encode()
	nonce := resolve.NewNonce()
	first := true
	send := func() (store.Version, resolve.Failure, error) {
		r, size, ok := body()
		if !ok {
			if first {
				return "", resolve.Failure{Kind: store.ErrTransient}, errors.New("the value's reader cannot seek to its start")
			}
			return "", resolve.Failure{Kind: store.ErrUnknownOutcome}, errors.New("the value cannot be sent again")
		}
		first = false
		return s.insert(ctx, u, key, nonce, r, size, kind)
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

// insert sends one multipart upload to u (the object's metadata, with the
// nonce, then size bytes of r, with a Content-Length: a body cut short is
// never a complete request) and returns the new generation. Nothing
// retries it.
func (s *Store) insert(ctx context.Context, u, key, nonce string, r io.Reader, size int64, kind resolve.OpKind) (store.Version, resolve.Failure, error) {
	meta, err := json.Marshal(map[string]any{
		"name": s.prefix + key, "contentType": "application/octet-stream",
		"metadata": map[string]string{metaNonce: nonce},
	})
	if err != nil {
		return "", resolve.Failure{Kind: store.ErrTransient}, err
	}
	boundary := resolve.NewNonce()
	head := "--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" + string(meta) +
		"\r\n--" + boundary + "\r\nContent-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	src := &sourceReader{r: r, left: size}
	b := io.MultiReader(strings.NewReader(head), src, strings.NewReader(tail))
	resp, err := s.send(ctx, http.MethodPost, u, b, int64(len(head))+size+int64(len(tail)), "multipart/related; boundary="+boundary)
	if src.failed.Load() {
		// The caller's reader failed mid-upload, so the request was cut
		// off before its declared length: GCS does not store it, but a
		// lenient server might store what it got, so the outcome is
		// unknown. PutStream spools plain readers first, so only a
		// failing io.ReadSeeker gets here.
		if resp != nil {
			resp.Body.Close()
		}
		return "", resolve.Failure{Kind: store.ErrUnknownOutcome}, fmt.Errorf("read value: %w", src.err)
	}
	if err != nil {
		return "", classify(kind, err), err
	}
	defer resp.Body.Close()
	var obj objectMeta
	if err := decodeJSON(resp.Body, maxMetaBody, &obj); err != nil {
		return "", classify(kind, err), err
	}
	gen, err := obj.gen()
	if err != nil {
		return "", classify(kind, err), err
	}
	return version(gen), resolve.Failure{}, nil
}

// sourceReader yields exactly left bytes of the caller's reader, and
// records a failure of that reader (an error, or fewer bytes than
// declared) as its own, apart from the upload's.
type sourceReader struct {
	r      io.Reader
	left   int64
	failed atomic.Bool
	err    error // set before failed
}

func (sr *sourceReader) Read(p []byte) (int, error) {
	if sr.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > sr.left {
		p = p[:sr.left]
	}
	n, err := sr.r.Read(p)
	sr.left -= int64(n)
	switch {
	case err == io.EOF && sr.left > 0:
		err = io.ErrUnexpectedEOF
	case err == io.EOF || err == nil:
		return n, err
	}
	sr.err = err
	sr.failed.Store(true)
	return n, err
}

// objectMeta is the part of an object resource the store reads. The API
// renders int64s as JSON strings; a bare number is accepted too.
type objectMeta struct {
	Name       string            `json:"name"`
	Generation json.RawMessage   `json:"generation"`
	Metadata   map[string]string `json:"metadata"`
}

func (o *objectMeta) gen() (int64, error) {
	g, err := strconv.ParseInt(strings.Trim(string(o.Generation), `"`), 10, 64)
	if err != nil || g <= 0 {
		return 0, &badAnswer{fmt.Sprintf("object %q without a valid generation (%s)", o.Name, o.Generation)}
	}
	return g, nil
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
	q := url.Values{"prettyPrint": {"false"}}
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
		q.Set("ifGenerationMatch", strconv.FormatInt(g, 10))
		kind = resolve.OpCondDelete
	}
	u := s.objectURL(key, q)
	send := func() (resolve.Failure, error) {
		resp, err := s.send(ctx, http.MethodDelete, u, nil, 0, "")
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			return resolve.Failure{}, nil
		}
		f := classify(kind, err)
		if kind == resolve.OpWrite && f.Kind == store.ErrNotFound {
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

// listPage is one page of an objects list.
type listPage struct {
	Items         []objectMeta `json:"items"`
	NextPageToken string       `json:"nextPageToken"`
}

// List returns one page of keys under prefix, in byte order, with their
// generations. It reads pages of the bucket's listing (by prefix, from
// After followed by a NUL byte, names and generations only) until it has
// one name more than the page holds, or the listing ends.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	o := opts.Bounded(maxListPage, maxListPage)
	limit := o.Limit
	q := url.Values{
		"prefix":      {s.prefix + prefix},
		"maxResults":  {strconv.Itoa(limit + 1)},
		"fields":      {"items(name,generation),nextPageToken"},
		"prettyPrint": {"false"},
	}
	if o.After != "" {
		// startOffset is inclusive; the smallest name after After is
		// After followed by a NUL byte.
		q.Set("startOffset", s.prefix+o.After+"\x00")
	}
	page := store.Page{Items: make([]store.Item, 0, min(limit, 100))}
	for n := 1; ; n++ {
		var lp listPage
		u := s.api + "b/" + escape(s.name) + "/o?" + q.Encode()
		if err := reads.Do(ctx, func() error { lp = listPage{}; return s.getJSON(ctx, u, maxListBody, &lp) }); err != nil {
			return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
		}
		for _, a := range lp.Items {
			if !strings.HasPrefix(a.Name, s.prefix) {
				continue
			}
			gen, err := a.gen()
			if err != nil {
				return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
			}
			if len(page.Items) == limit {
				page.Next = page.Items[limit-1].Key
				return page, nil
			}
			page.Items = append(page.Items, store.Item{Key: a.Name[len(s.prefix):], Version: version(gen)})
		}
		if lp.NextPageToken == "" {
			return page, nil
		}
		if n == maxListRequests {
			if len(page.Items) > 0 {
				page.Next = page.Items[len(page.Items)-1].Key // a short page; the caller goes on from here
				return page, nil
			}
			err := fmt.Errorf("no name under the prefix in %d list pages", maxListRequests)
			return store.Page{}, store.NewOpError(backend, "list", prefix, store.ErrTransient, err)
		}
		if err := ctx.Err(); err != nil {
			return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
		}
		q.Set("pageToken", lp.NextPageToken)
	}
}
