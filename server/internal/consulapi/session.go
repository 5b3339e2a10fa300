package consulapi

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// maxSessionBody bounds a session create body.
const maxSessionBody = 64 << 10

// sessionRequest is the body of /v1/session/create. Pointers tell an
// absent field from an empty one: an explicit "NodeChecks": [] means no
// checks, an absent one means serfHealth.
type sessionRequest struct {
	Name          string
	Node          string
	LockDelay     json.RawMessage
	Behavior      string
	TTL           string
	Checks        *[]string
	NodeChecks    *[]string
	ServiceChecks *[]serviceCheck
}

// parseLockDelay applies Consul's quirk: a string is a Go duration, a
// number is nanoseconds, and any result below 1000ns is taken as seconds
// (20 → 20s, "20ns" → 20s, -5 → -5s). A bare string number ("20") is
// invalid.
func parseLockDelay(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return defaultLockDelay, nil
	}
	var d time.Duration
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, err
		}
		d = v
	} else {
		var n float64
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, fmt.Errorf("LockDelay: want a duration string or a number, got %s", raw)
		}
		d = time.Duration(n)
	}
	if d < 1000 {
		d *= time.Second
	}
	return d, nil
}

// newSession validates a create request into a session (ID set, indexes
// not yet).
func (h *Handler) newSession(body []byte) (*sessionEntry, error) {
	var req sessionRequest
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, badRequest("Request decode failed: " + err.Error())
		}
	}
	delay, err := parseLockDelay(req.LockDelay)
	if err != nil {
		return nil, badRequest("Request decode failed: " + err.Error())
	}
	se := &sessionEntry{ID: newUUID(), Name: req.Name, Node: req.Node, LockDelay: int64(delay), Behavior: req.Behavior, TTL: req.TTL}
	if se.Node == "" {
		se.Node = h.opts.NodeName
	}
	switch se.Behavior {
	case "":
		se.Behavior = behaviorRelease
	case behaviorRelease, behaviorDelete:
	default:
		return nil, serverError("Invalid Behavior setting '%s'", se.Behavior)
	}
	if se.TTL != "" {
		ttl, err := time.ParseDuration(se.TTL)
		if err != nil {
			return nil, serverError("Session TTL '%s' invalid: %v", se.TTL, err)
		}
		if ttl != 0 && (ttl < h.opts.MinSessionTTL || ttl > maxSessionTTL) {
			return nil, serverError("Invalid Session TTL '%d', must be between [%v=%v]", ttl, h.opts.MinSessionTTL, maxSessionTTL)
		}
	}
	// Consul's session endpoint: neither Checks nor NodeChecks means
	// serfHealth, whatever ServiceChecks holds.
	switch {
	case req.Checks == nil && req.NodeChecks == nil:
		se.NodeChecks = []string{serfHealth}
	case req.NodeChecks != nil:
		se.NodeChecks = *req.NodeChecks
	}
	if req.Checks != nil {
		se.Checks = *req.Checks
		if req.NodeChecks == nil {
			se.NodeChecks = *req.Checks
		}
	}
	if req.ServiceChecks != nil {
		se.ServiceChecks = *req.ServiceChecks
	}
	return se, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (h *Handler) sessionCreate(w http.ResponseWriter, r *http.Request, q url.Values) error {
	if err := h.parseDC(q); err != nil {
		return err
	}
	var body []byte
	if r.ContentLength != 0 {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSessionBody))
		if err != nil {
			return badRequest("Request decode failed: " + err.Error())
		}
		body = b
	}
	se, err := h.newSession(body)
	if err != nil {
		return err
	}
	if _, err := h.e.Update(r.Context(), func(tx *engine.Tx) error {
		if err := h.sessionChecksOK(tx, se); err != nil {
			return err
		}
		// Counted in the write transaction, so concurrent creates cannot
		// overshoot; the walk stops at the limit.
		if n, _ := SessionCount(tx, h.opts.MaxSessions); n >= h.opts.MaxSessions {
			return errorf(http.StatusTooManyRequests, "Too many sessions (limit %d)", h.opts.MaxSessions)
		}
		saveSession(tx, se)
		return nil
	}); err != nil {
		return err
	}
	h.sess.arm(se)
	writeJSON(w, q, 0, map[string]string{"ID": se.ID})
	return nil
}

func (h *Handler) sessionDestroy(w http.ResponseWriter, r *http.Request, q url.Values, id string) error {
	if err := h.parseDC(q); err != nil {
		return err
	}
	if id == "" {
		return badRequest("Missing session")
	}
	if err := h.invalidate(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, q, 0, true)
	return nil
}

// sessionRenew answers a one-element array with the session (TTL
// included: RenewPeriodic re-reads its interval from it) and restarts its
// timer; an unknown session is 404.
func (h *Handler) sessionRenew(w http.ResponseWriter, r *http.Request, q url.Values, id string) error {
	if err := h.parseDC(q); err != nil {
		return err
	}
	if id == "" {
		return badRequest("Missing session")
	}
	var se *sessionEntry
	if err := h.e.View(func(tx *engine.Tx) error {
		se, _ = loadSession(tx, id)
		return nil
	}); err != nil {
		return err
	}
	if se == nil {
		return errorf(http.StatusNotFound, "Session id '%s' not found", id)
	}
	h.sess.arm(se)
	writeJSON(w, q, 0, []*sessionEntry{se})
	return nil
}

// sessionRead serves info, list and node: blocking reads of the session
// table.
// collect returns the sessions to answer, read inside tx.
func (h *Handler) sessionRead(w http.ResponseWriter, r *http.Request, q url.Values, watch string, collect func(tx *engine.Tx) []*sessionEntry) error {
	qo, err := h.parseQuery(q)
	if err != nil {
		return err
	}
	var out []*sessionEntry
	idx, err := h.block(r.Context(), qo, h.touchWait(watch), func(tx *engine.Tx) (uint64, error) {
		out = collect(tx)
		if out == nil {
			out = []*sessionEntry{}
		}
		return sessionsIndex(tx), nil
	})
	if err != nil {
		return err
	}
	setQueryMeta(w, idx, qo.consistency)
	writeJSON(w, q, 0, out)
	return nil
}

// serveSession routes /v1/session/<op>[/<arg>].
func (h *Handler) serveSession(w http.ResponseWriter, r *http.Request, q url.Values, rest string) error {
	op, arg, _ := strings.Cut(rest, "/")
	write := op == "create" || op == "destroy" || op == "renew"
	read := op == "info" || op == "list" || op == "node"
	switch {
	case write && r.Method != http.MethodPut:
		return methodNotAllowed(r.Method, "OPTIONS,PUT")
	case read && r.Method != http.MethodGet:
		return methodNotAllowed(r.Method, "OPTIONS,GET")
	}
	switch op {
	case "create":
		return h.sessionCreate(w, r, q)
	case "destroy":
		return h.sessionDestroy(w, r, q, arg)
	case "renew":
		return h.sessionRenew(w, r, q, arg)
	case "info":
		if arg == "" {
			return badRequest("Missing session")
		}
		return h.sessionRead(w, r, q, sessionWatchPrefix+arg, func(tx *engine.Tx) []*sessionEntry {
			if se, ok := loadSession(tx, arg); ok {
				return []*sessionEntry{se}
			}
			return nil
		})
	case "node":
		if arg == "" {
			return badRequest("Missing node name")
		}
		return h.sessionRead(w, r, q, sessionWatchPrefix, func(tx *engine.Tx) []*sessionEntry {
			var out []*sessionEntry
			for _, se := range listSessions(tx) {
				if se.Node == arg {
					out = append(out, se)
				}
			}
			return out
		})
	case "list":
		return h.sessionRead(w, r, q, sessionWatchPrefix, listSessions)
	}
	return errorf(http.StatusNotFound, "404 page not found")
}

func formatUUID(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
