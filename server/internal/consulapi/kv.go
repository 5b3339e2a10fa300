package consulapi

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

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
			for _, kv := range tx.ListKV(key, "", 0) {
				out = append(out, toDir(kv))
			}
			return tx.KeysIndex(key), nil
		}
		kv, ok := tx.GetKV(key)
		if !ok {
			return tx.KeysIndex(""), nil
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
		keys = keys[:0]
		for _, kv := range tx.ListKV(prefix, "", 0) {
			keys = append(keys, kv.Key)
		}
		return tx.KeysIndex(prefix), nil
	})
	if err != nil {
		return err
	}
	setQueryMeta(w, idx, qo.consistency)
	keys = rollUp(keys, prefix, sep)
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
	op := kvOp{Verb: verbSet, Key: key}
	var err error
	if has(q, "flags") {
		if op.Flags, err = parseUintParam(q.Get("flags")); err != nil {
			return err
		}
	}
	switch {
	case has(q, "cas"):
		op.Verb = verbCAS
		if op.Index, err = parseUintParam(q.Get("cas")); err != nil {
			return err
		}
	case has(q, "acquire"):
		op.Verb, op.Session = verbLock, q.Get("acquire")
	case has(q, "release"):
		op.Verb, op.Session = verbUnlock, q.Get("release")
	}
	if op.Value, err = h.readValue(w, r); err != nil {
		return err
	}
	ok, err := h.applyOne(r, op)
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
	op := kvOp{Verb: verbDelete, Key: key}
	switch {
	case has(q, "recurse"):
		op.Verb = verbDeleteTree
	case key == "":
		return badRequest("Missing key name")
	case has(q, "cas"):
		op.Verb = verbDeleteCAS
		var err error
		if op.Index, err = parseUintParam(q.Get("cas")); err != nil {
			return err
		}
	}
	ok, err := h.applyOne(r, op)
	if err != nil {
		return err
	}
	writeBool(w, q, ok)
	return nil
}

// applyOne runs one write op in its own durable transaction. A condition
// that does not hold is (false, nil); bad input is an error.
//
// A cas or delete-cas on a contended key whose index is already stale is
// refused before it reaches the engine's writer (refusedNow): a hot key's
// losers cost no group-commit round, no write transaction and no wait for
// a batch-mate's fsync.
func (h *Handler) applyOne(r *http.Request, op kvOp) (bool, error) {
	conditional := op.Verb == verbCAS || op.Verb == verbDeleteCAS
	if conditional && h.refusedNow(op) {
		return false, nil
	}
	applied := false
	_, err := h.e.Update(r.Context(), func(tx *engine.Tx) error {
		applied = false
		_, err := h.applyOp(direct{tx}, op)
		switch {
		case err == nil:
			applied = true
		case isFailure(err):
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if conditional {
		h.contended.mark(op.Key, !applied)
	}
	return applied, nil
}

// isFailure reports whether err is an op whose condition did not hold.
func isFailure(err error) bool {
	var f *opFailure
	return errors.As(err, &f)
}

// refusedNow reports whether op, a cas or delete-cas on a key whose last
// cas was refused, already fails on the latest durable state
// (engine.ModifyIndex), so that it is answered false from a read
// snapshot. The answer is linearizable: the snapshot holds every write
// acknowledged before this request arrived (the engine publishes a commit
// before it acknowledges it) and no write that is not durable, so it is
// the store's state at one moment inside the request's lifetime, and a
// cas refused on it is refused at that moment; a write committed after
// the snapshot is concurrent with this request and is ordered after it. A
// refusal changes nothing, so nothing else is owed: no index, no watcher
// woken. When the condition holds on the snapshot (or the engine cannot
// be read), the writer decides on the state it commits on, as for every
// write, since another write may land in between.
//
// Only contended keys are looked at first: on a key whose cas applies (a
// key of one's own) the snapshot would be one more read transaction per
// write, for nothing.
func (h *Handler) refusedNow(op kvOp) bool {
	if !h.contended.marked(op.Key) {
		return false
	}
	modify, exists, err := h.e.ModifyIndex(op.Key)
	if err != nil || !staleIndex(op.Verb, op.Index, modify, exists) {
		return false
	}
	h.contended.mark(op.Key, true)
	return true
}

// contention remembers, per slot of a key hash, whether a cas or
// delete-cas there was refused lately: a refusal sets the slot's score to
// contendedScore, an applied one takes one off, and a slot above zero is
// contended. A hot key, with a refusal between any two wins, stays
// contended; a key refused once goes back to the plain path after a few
// wins. It only steers refusedNow: a wrong answer (two keys in one slot,
// racing updates of a score) costs one read transaction, or one trip
// through the writer, never a wrong reply.
type contention struct {
	seed  maphash.Seed
	slots [256]atomic.Int32
}

const contendedScore = 16

func (c *contention) slot(key string) *atomic.Int32 {
	return &c.slots[maphash.String(c.seed, key)%uint64(len(c.slots))]
}

func (c *contention) marked(key string) bool { return c.slot(key).Load() > 0 }

func (c *contention) mark(key string, refused bool) {
	s := c.slot(key)
	switch v := s.Load(); {
	case refused && v != contendedScore:
		s.Store(contendedScore)
	case !refused && v > 0:
		s.CompareAndSwap(v, v-1)
	}
}
