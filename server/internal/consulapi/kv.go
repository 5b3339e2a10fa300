package consulapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// maxReserve is the most readAll allocates for a body before it arrives.
const maxReserve = 4 << 10

const docsKVMaxValueSize = "https://developer.hashicorp.com/docs/agent/config/config-files#kv_max_value_size"

// serveKV serves /v1/kv/<key>. key is the decoded path after /v1/kv/.
func (h *Handler) serveKV(w http.ResponseWriter, r *http.Request, q url.Values, key string) error {
	if len(key) > h.opts.MaxKeyLen {
		return badRequest(fmt.Sprintf("Key too long (%d bytes > %d bytes)", len(key), h.opts.MaxKeyLen))
	}
	switch r.Method {
	case http.MethodGet:
		if has(q, "keys") {
			return h.kvKeys(w, r, q, key)
		}
		return h.kvGet(w, r, q, key)
	case http.MethodPut:
		return h.kvPut(w, r, q, key)
	case http.MethodDelete:
		return h.kvDelete(w, r, q, key)
	case http.MethodOptions:
		w.Header().Set("Allow", "OPTIONS,GET,PUT,DELETE")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return methodNotAllowed(r.Method, "OPTIONS,GET,PUT,DELETE")
}

// kvGet serves a single key (?raw for the bare value) or, with ?recurse,
// every entry under the prefix. Nothing found is 404 with an empty body
// and the meta headers.
func (h *Handler) kvGet(w http.ResponseWriter, r *http.Request, q url.Values, key string) error {
	qo, err := h.parseQuery(q) // Consul parses the query before anything else
	if err != nil {
		return err
	}
	recurse := has(q, "recurse")
	if !recurse && key == "" {
		return badRequest("Missing key name")
	}
	var out []*dirEntry
	idx, err := h.block(r.Context(), qo, h.kvWait(key), func(tx *engine.Tx) (uint64, error) {
		out = out[:0]
		if recurse {
			kvs, err := consulmodel.List(tx, key)
			for _, kv := range kvs {
				out = append(out, toDir(kv))
			}
			return consulmodel.KeysIndex(tx, key), err
		}
		kv, ok, err := consulmodel.Get(tx, key)
		if err != nil || !ok {
			return consulmodel.KeysIndex(tx, ""), err
		}
		out = append(out, toDir(kv))
		return kv.ModifyIndex, nil
	})
	if err != nil {
		return err
	}
	setQueryMeta(w, idx, qo.consistency)
	if len(out) == 0 {
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	if has(q, "raw") && !recurse {
		body := out[0].Value
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "sandbox")
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return nil
	}
	writeEntries(w, q, out)
	return nil
}

// kvKeys serves ?keys (with ?separator, or the misspelt ?seperator).
func (h *Handler) kvKeys(w http.ResponseWriter, r *http.Request, q url.Values, prefix string) error {
	sep := q.Get("seperator")
	if has(q, "separator") {
		sep = q.Get("separator")
	}
	qo, err := h.parseQuery(q)
	if err != nil {
		return err
	}
	var keys []string
	idx, err := h.block(r.Context(), qo, h.kvWait(prefix), func(tx *engine.Tx) (uint64, error) {
		var err error
		keys, err = consulmodel.Keys(tx, prefix)
		return consulmodel.KeysIndex(tx, prefix), err
	})
	if err != nil {
		return err
	}
	setQueryMeta(w, idx, qo.consistency)
	keys = consulmodel.RollUp(keys, prefix, sep)
	if len(keys) == 0 && prefix != "" {
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	if keys == nil {
		keys = []string{}
	}
	writeJSON(w, q, 0, keys)
	return nil
}

// conflicting answers Consul's 400 when more than one of names is present.
func conflicting(q url.Values, names ...string) error {
	n := 0
	for _, name := range names {
		if has(q, name) {
			n++
		}
	}
	if n > 1 {
		return badRequest(fmt.Sprintf("Conflicting flags: %v\n", q.Encode()))
	}
	return nil
}

// parseUintParam parses a uint64 parameter; Consul answers a bad one with
// 500 and strconv's text.
func parseUintParam(v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, serverError("%v", err)
	}
	return n, nil
}

// kvPut serves PUT: set, ?cas, ?acquire, ?release, with ?flags. The
// answer is true or false, always 200.
func (h *Handler) kvPut(w http.ResponseWriter, r *http.Request, q url.Values, key string) error {
	// Consul parses the common query options on writes too, so a bad
	// index, wait or stale+consistent is a 400 here as well.
	if _, err := h.parseQuery(q); err != nil {
		return err
	}
	if key == "" {
		return badRequest("Missing key name")
	}
	if err := conflicting(q, "cas", "acquire", "release"); err != nil {
		return err
	}
	op := consulmodel.Op{Verb: consulmodel.VerbSet, Key: key}
	var err error
	if has(q, "flags") {
		if op.Flags, err = parseUintParam(q.Get("flags")); err != nil {
			return err
		}
	}
	switch {
	case has(q, "cas"):
		op.Verb = consulmodel.VerbCAS
		if op.Index, err = parseUintParam(q.Get("cas")); err != nil {
			return err
		}
	case has(q, "acquire"):
		op.Verb, op.Session = consulmodel.VerbLock, q.Get("acquire")
	case has(q, "release"):
		op.Verb, op.Session = consulmodel.VerbUnlock, q.Get("release")
	}
	if op.Value, err = h.readValue(w, r); err != nil {
		return err
	}
	return h.write(w, r, q, op)
}

// write applies op and answers whether it did: true or false, 200.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, q url.Values, op consulmodel.Op) error {
	ok, err := h.m.Write(r.Context(), op)
	if err != nil {
		return err
	}
	writeBool(w, q, ok)
	return nil
}

// readValue reads a PUT body, counting real bytes (not Content-Length) so
// that no body larger than MaxValueSize is stored (CVE-2025-11374). A
// declared length sizes the buffer (one allocation of the value's size);
// the limit still counts what arrives.
func (h *Handler) readValue(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := h.opts.MaxValueSize
	if r.ContentLength > limit {
		return nil, errorf(http.StatusRequestEntityTooLarge, "Request body(%d bytes) too large, max size: %d bytes. See %s.", r.ContentLength, limit, docsKVMaxValueSize)
	}
	b, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err == nil {
		return b, nil
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return nil, errorf(http.StatusRequestEntityTooLarge, "Request body too large, max size: %d bytes. See %s.", limit, docsKVMaxValueSize)
	}
	return nil, err
}

// readAll is io.ReadAll with room for size bytes (a Content-Length; -1
// when unknown) from the start, and one more so that the end of the body
// needs no second buffer. It reserves at most maxReserve before the bytes
// arrive: a declared length costs no memory that was not sent.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(size, maxReserve)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) { // longer than declared: let it grow
			b = append(b, 0)[:len(b)]
		}
	}
}

// kvDelete serves DELETE: a key, ?recurse (a prefix), or ?cas.
func (h *Handler) kvDelete(w http.ResponseWriter, r *http.Request, q url.Values, key string) error {
	if _, err := h.parseQuery(q); err != nil {
		return err
	}
	if err := conflicting(q, "recurse", "cas"); err != nil {
		return err
	}
	op := consulmodel.Op{Verb: consulmodel.VerbDelete, Key: key}
	switch {
	case has(q, "recurse"):
		op.Verb = consulmodel.VerbDeleteTree
	case key == "":
		return badRequest("Missing key name")
	case has(q, "cas"):
		op.Verb = consulmodel.VerbDeleteCAS
		var err error
		if op.Index, err = parseUintParam(q.Get("cas")); err != nil {
			return err
		}
	}
	return h.write(w, r, q, op)
}

// toDir converts a model entry into the wire entry.
func toDir(kv consulmodel.KV) *dirEntry {
	return &dirEntry{
		LockIndex:   kv.LockIndex,
		Key:         kv.Key,
		Flags:       kv.Flags,
		Value:       normValue(kv.Value),
		Session:     kv.Session,
		CreateIndex: kv.CreateIndex,
		ModifyIndex: kv.ModifyIndex,
	}
}
