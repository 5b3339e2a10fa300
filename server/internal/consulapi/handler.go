package consulapi

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// Defaults used where Options leaves a field zero.
const (
	// DefaultNodeName is the node name when the host name is unknown.
	DefaultNodeName           = "latchkey"
	DefaultDatacenter         = "dc1"
	DefaultMaxValueSize       = 512 << 10 // Consul's kv_max_value_size
	DefaultMaxKeyLen          = 4096
	DefaultMaxTxnBody         = 512 << 10 // Consul's txn_max_req_len
	DefaultMaxTxnOps          = 128
	DefaultMinSessionTTL      = 10 * time.Second // Consul's session_ttl_min
	DefaultQueryWait          = 5 * time.Minute  // Options.DefaultQueryTime
	DefaultMaxQueryTime       = 10 * time.Minute
	DefaultMaxBlockingQueries = 8192
	DefaultMaxSessions        = 16384
)

// Options configure a Handler. A nil *Options means all defaults; each
// zero field means the default named on it; a negative one is an error.
type Options struct {
	// NodeName is the node that /v1/agent/self reports and that sessions
	// carry. Zero: the host name (DefaultNodeName if unknown).
	NodeName string
	// Datacenter is the one datacenter this server is. Zero:
	// DefaultDatacenter.
	Datacenter string
	// ACLToken, when set, is required on every /v1/ request (?token=,
	// X-Consul-Token or Authorization: Bearer); without a token the answer
	// is 403 "Permission denied", with another token 403 "ACL not found",
	// Consul's texts. Zero: no access control.
	ACLToken string
	// Logger receives errors and session expiries. Zero: slog.Default().
	Logger *slog.Logger

	// MaxValueSize is the largest KV value, in bytes (Consul's
	// kv_max_value_size). Larger bodies get 413. Zero:
	// DefaultMaxValueSize (512 KiB).
	MaxValueSize int64
	// MaxKeyLen is the longest key, in bytes. Consul has no explicit
	// limit; latchkey answers 400 beyond it. Zero: DefaultMaxKeyLen.
	MaxKeyLen int
	// MaxTxnBody is the largest /v1/txn body (Consul's txn_max_req_len,
	// at least MaxValueSize). Zero: DefaultMaxTxnBody (512 KiB).
	MaxTxnBody int64
	// MaxTxnOps is the most operations in one /v1/txn. Zero:
	// DefaultMaxTxnOps.
	MaxTxnOps int

	// MinSessionTTL is the shortest session TTL accepted (Consul's
	// session_ttl_min). Zero: DefaultMinSessionTTL. Tests lower it to
	// keep TTL expiry fast; production should keep the default.
	MinSessionTTL time.Duration
	// DefaultQueryTime is the blocking-query timeout when ?wait is absent.
	// Zero: DefaultQueryWait (5m).
	DefaultQueryTime time.Duration
	// MaxQueryTime caps ?wait. Zero: DefaultMaxQueryTime.
	MaxQueryTime time.Duration
	// BumpIdenticalWrites gives every successful set, cas and acquire a
	// fresh ModifyIndex and wakes its watchers, even when the result
	// equals the stored entry (Key, Value, Flags, Session, LockIndex).
	// Zero (false): such a write is skipped as Consul (since 1.7) skips
	// it: it answers true, keeps ModifyIndex and wakes no watcher. The
	// bumping rule (latchkey's before) suits clients that take "a write
	// succeeded" to mean "the index moved", which Consul never promised.
	BumpIdenticalWrites bool
	// MaxBlockingQueries caps the blocking queries waiting at once (each
	// holds a connection and a goroutine); one more is answered 429.
	// Zero: DefaultMaxBlockingQueries.
	MaxBlockingQueries int
	// MaxSessions caps the live sessions (each may hold a TTL timer and
	// locks); a create beyond it is answered 429 "Too many sessions
	// (limit N)" and writes nothing. Consul has no such limit; clients
	// see it as they see Consul's rate limits. Zero: DefaultMaxSessions.
	MaxSessions int
}

// HostNodeName is the node name when none is configured: the host name,
// or DefaultNodeName when it is unknown.
func HostNodeName() string {
	if h, _ := os.Hostname(); h != "" {
		return h
	}
	return DefaultNodeName
}

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// the defaults, or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	if err := optcheck.NonNegative(
		optcheck.Named("MaxValueSize", v.MaxValueSize), optcheck.Named("MaxKeyLen", v.MaxKeyLen),
		optcheck.Named("MaxTxnBody", v.MaxTxnBody), optcheck.Named("MaxTxnOps", v.MaxTxnOps),
		optcheck.Named("MinSessionTTL", v.MinSessionTTL), optcheck.Named("DefaultQueryTime", v.DefaultQueryTime),
		optcheck.Named("MaxQueryTime", v.MaxQueryTime), optcheck.Named("MaxBlockingQueries", v.MaxBlockingQueries),
		optcheck.Named("MaxSessions", v.MaxSessions),
	); err != nil {
		return v, fmt.Errorf("consulapi: %w", err)
	}
	if v.NodeName == "" {
		v.NodeName = HostNodeName()
	}
	v.Datacenter = cmp.Or(v.Datacenter, DefaultDatacenter)
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	v.MaxValueSize = cmp.Or(v.MaxValueSize, DefaultMaxValueSize)
	v.MaxKeyLen = cmp.Or(v.MaxKeyLen, DefaultMaxKeyLen)
	v.MaxTxnBody = max(cmp.Or(v.MaxTxnBody, DefaultMaxTxnBody), v.MaxValueSize)
	v.MaxTxnOps = cmp.Or(v.MaxTxnOps, DefaultMaxTxnOps)
	v.MinSessionTTL = cmp.Or(v.MinSessionTTL, DefaultMinSessionTTL)
	v.DefaultQueryTime = cmp.Or(v.DefaultQueryTime, DefaultQueryWait)
	v.MaxQueryTime = cmp.Or(v.MaxQueryTime, DefaultMaxQueryTime)
	v.MaxBlockingQueries = cmp.Or(v.MaxBlockingQueries, DefaultMaxBlockingQueries)
	v.MaxSessions = cmp.Or(v.MaxSessions, DefaultMaxSessions)
	return v, nil
}

// Handler serves the Consul-compatible API under /v1/. Create it with New
// and Close it before closing its engine.
type Handler struct {
	e    *engine.Engine
	m    *consulmodel.Model
	opts Options
	log  *slog.Logger
	// blocking holds one token per blocking query in flight.
	blocking chan struct{}
	// stopping ends when StopBlocking is called; it ends every blocking
	// query from then on.
	stopping     context.Context
	stopBlocking context.CancelFunc
}

// New returns a Handler over e. It restarts the TTL timer of every stored
// session at full length (TTL×2), as a Consul leader does when it takes
// over.
//
// It fails, starting nothing, when opts has a negative field.
func New(e *engine.Engine, opts *Options) (*Handler, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := consulmodel.New(e, consulmodel.Options{NodeName: o.NodeName, Datacenter: o.Datacenter,
		BumpIdenticalWrites: o.BumpIdenticalWrites, MaxSessions: o.MaxSessions, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	h := &Handler{e: e, m: m, opts: o, log: o.Logger, blocking: make(chan struct{}, o.MaxBlockingQueries)}
	h.stopping, h.stopBlocking = context.WithCancel(context.Background())
	return h, nil
}

// StopBlocking ends the blocking queries, those waiting now and any that
// arrive later: each answers at once with the current state, as on its
// own timeout. A server calls it when its shutdown begins, so that queries
// that may wait up to MaxQueryTime do not hold up the requests that drain.
func (h *Handler) StopBlocking() { h.stopBlocking() }

// Close ends the blocking queries (StopBlocking), stops the session timers
// and waits for invalidations in flight. It does not close the engine.
func (h *Handler) Close() error {
	h.stopBlocking()
	h.m.Close()
	return nil
}

// ServeHTTP serves every path under /v1/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.serve(w, r); err != nil {
		h.writeError(w, r, wireError(err))
	}
}

// serve parses the query once (see query); every handler below reads it
// from q.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.Path
	// cleanhttp.PrintablePathCheckHandler: 400, no body.
	if strings.IndexFunc(path, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		w.WriteHeader(http.StatusBadRequest)
		return nil
	}
	q := query(r)
	if err := h.authorize(r, q); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(path, "/v1/kv/") || path == "/v1/kv":
		return h.serveKV(w, r, q, strings.TrimPrefix(strings.TrimPrefix(path, "/v1/kv"), "/"))
	case path == "/v1/txn":
		return h.serveTxn(w, r, q)
	case strings.HasPrefix(path, "/v1/session/"):
		return h.serveSession(w, r, q, strings.TrimPrefix(path, "/v1/session/"))
	}
	return h.serveAgent(w, r, q, path)
}

// authorize checks the ACL token, taken as Consul does from ?token=, then
// X-Consul-Token, then Authorization: Bearer (the first one present
// decides). As in Consul, no token is the anonymous token, which may do
// nothing here (403 "Permission denied"), and a token that is not ours is
// unknown (403 "ACL not found").
func (h *Handler) authorize(r *http.Request, q url.Values) error {
	if h.opts.ACLToken == "" {
		return nil
	}
	tok := q.Get("token")
	if tok == "" {
		tok = r.Header.Get("X-Consul-Token")
	}
	if tok == "" {
		if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			tok = strings.TrimSpace(a[7:])
		}
	}
	switch {
	case tok == "":
		return errPermissionDenied
	case subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.ACLToken)) != 1:
		return errACLNotFound
	}
	return nil
}

// Stats is a snapshot of the handler's in-memory state, for metrics.
type Stats struct {
	// SessionTimers is the number of TTL sessions with an armed timer.
	SessionTimers int
	// LockDelays is the number of keys under a lock-delay (some may
	// have just ended).
	LockDelays int
	// BlockingQueries is the number of blocking queries waiting now.
	BlockingQueries int
}

// SessionExpiry reports when the TTL session id will be invalidated if it
// is not renewed before (ok is false for a session without a running TTL
// timer). The time lives in memory only, as Consul's leader keeps it.
func (h *Handler) SessionExpiry(id string) (at time.Time, ok bool) { return h.m.SessionExpiry(id) }

// Stats returns a snapshot of the handler's in-memory state.
func (h *Handler) Stats() Stats {
	ms := h.m.Stats()
	return Stats{SessionTimers: ms.SessionTimers, LockDelays: ms.LockDelays, BlockingQueries: len(h.blocking)}
}

// wireError turns a refusal of the model into Consul's answer for it;
// other errors pass unchanged (writeError answers them 500).
func wireError(err error) error {
	var me *consulmodel.Error
	if !errors.As(err, &me) {
		return err
	}
	status := http.StatusInternalServerError // Rejected: Consul's 500 for input it refuses
	switch me.Code {
	case consulmodel.Invalid:
		status = http.StatusBadRequest
	case consulmodel.NotFound:
		status = http.StatusNotFound
	case consulmodel.TooMany:
		status = http.StatusTooManyRequests
	}
	return &httpError{status: status, reason: me.Msg}
}
