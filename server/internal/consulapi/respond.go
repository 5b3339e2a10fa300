package consulapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/latchkey/latchkey/server/internal/hdrval"
)

// httpError is an error with the status and plain-text body Consul sends
// for it. Handlers return errors; writeError is the one place that turns
// them into responses. Errors that are not httpErrors become 500 with the
// error's text, as Consul answers everything it has no code for.
type httpError struct {
	status int
	reason string
	allow  string // Allow header for 405
}

func (e *httpError) Error() string { return e.reason }

func errorf(status int, format string, args ...any) error {
	return &httpError{status: status, reason: fmt.Sprintf(format, args...)}
}

func badRequest(reason string) error {
	return &httpError{status: http.StatusBadRequest, reason: reason}
}

// serverError is a 500 with Consul's plain error text, for the cases where
// Consul answers 500 to bad input (bad flags, cas, invalid session, …).
func serverError(format string, args ...any) error {
	return errorf(http.StatusInternalServerError, format, args...)
}

// The ACL refusals, with Consul's texts: the anonymous token (none given)
// lacks permission; a token the server does not know is not found.
var (
	errPermissionDenied = &httpError{status: http.StatusForbidden, reason: "Permission denied"}
	errACLNotFound      = &httpError{status: http.StatusForbidden, reason: "ACL not found"}
)

func methodNotAllowed(method string, allow string) error {
	return &httpError{status: http.StatusMethodNotAllowed, reason: fmt.Sprintf("method %s not allowed", method), allow: allow}
}

// writeError writes err the way Consul does: the status and the reason as
// a plain-text body.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{status: http.StatusInternalServerError, reason: err.Error()}
		// A request ended by its context (client gone, server shutting
		// down) still gets an answer, never an empty 200 that a client
		// could read as "false"; only real failures are logged.
		if r.Context().Err() == nil {
			h.log.Error("consulapi: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	if he.allow != "" {
		w.Header().Set("Allow", he.allow)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(he.status)
	fmt.Fprint(w, he.reason)
}

// writeJSON writes v as the JSON body with status 200 (or status when
// non-zero). ?pretty (in the request's query q) indents it as Consul does.
func writeJSON(w http.ResponseWriter, q url.Values, status int, v any) {
	var (
		buf []byte
		err error
	)
	if has(q, "pretty") {
		buf, err = json.MarshalIndent(v, "", "    ")
		buf = append(buf, '\n')
	} else {
		buf, err = json.Marshal(v)
	}
	if err != nil { // only unsupported types; a programming error
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, status, buf)
}

// writeBody writes buf, a JSON document, with status 200 (or status when
// non-zero).
func writeBody(w http.ResponseWriter, status int, buf []byte) {
	h := w.Header()
	h["Content-Type"] = valJSON
	if n := len(buf); n < len(valLengths) {
		h["Content-Length"] = valLengths[n]
	} else {
		h["Content-Length"] = []string{strconv.Itoa(n)}
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(buf)
}

// writeBool answers a KV write: writeJSON(w, q, 0, ok) without encoding.
func writeBool(w http.ResponseWriter, q url.Values, ok bool) {
	i := 0
	if ok {
		i = 1
	}
	if has(q, "pretty") {
		i += 2
	}
	writeBody(w, 0, boolBodies[i])
}

// boolBodies are false, true, and both as ?pretty writes them. Nothing
// may write into them (an io.Writer never does).
var boolBodies = [4][]byte{[]byte("false"), []byte("true"), []byte("false\n"), []byte("true\n")}

// writeEntries answers KV entries: writeJSON(w, q, 0, es), encoded
// without reflection (appendEntries) into a pooled buffer.
func writeEntries(w http.ResponseWriter, q url.Values, es []*dirEntry) {
	if has(q, "pretty") {
		writeJSON(w, q, 0, es)
		return
	}
	bp := bodyPool.Get().(*[]byte)
	*bp = appendEntries((*bp)[:0], es)
	writeBody(w, 0, *bp) // Write copies: an io.Writer keeps no p
	if cap(*bp) <= maxPooledBody {
		bodyPool.Put(bp)
	}
}

// bodyPool holds the buffers writeEntries encodes into; one larger than
// maxPooledBody (a big ?recurse) is left to the GC.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledBody = 64 << 10

// Header values that every response shares instead of allocating its own:
// net/http only reads a header's values, and Header.Set or Add replace or
// append to a copy (each slice has length and capacity 1). Nothing may
// write into them. The keys used with them are in canonical form
// (textproto.CanonicalMIMEHeaderKey), as Header.Set would make them.
var (
	valJSON        = []string{"application/json"}
	valZero        = []string{"0"}
	valTrue        = []string{"true"}
	valConsistency = map[string][]string{"leader": {"leader"}, "stale": {"stale"}, "consistent": {"consistent"}}
	// valLengths[n] is the Content-Length n, for the short bodies (true,
	// false, small entries).
	valLengths = func() (v [512][]string) {
		for n := range v {
			v[n] = []string{strconv.Itoa(n)}
		}
		return v
	}()
)

// setQueryMeta sets the headers of every read: X-Consul-Index (never 0),
// X-Consul-LastContact and X-Consul-KnownLeader (this server is always
// its own leader), X-Consul-Effective-Consistency.
func setQueryMeta(w http.ResponseWriter, index uint64, consistency string) {
	if index == 0 {
		index = 1
	}
	w.Header()["X-Consul-Index"] = indexVals.Uint(index)
	setLeaderMeta(w, consistency)
}

// indexVals hold the X-Consul-Index values: each shares its allocation
// with the next few dozen (hdrval).
var indexVals hdrval.Slabs

// setLeaderMeta sets the meta headers without an index (read-only txns).
func setLeaderMeta(w http.ResponseWriter, consistency string) {
	h := w.Header()
	h["X-Consul-Lastcontact"] = valZero
	h["X-Consul-Knownleader"] = valTrue
	switch v, ok := valConsistency[consistency]; {
	case ok:
		h["X-Consul-Effective-Consistency"] = v
	case consistency != "":
		h.Set("X-Consul-Effective-Consistency", consistency)
	}
}
