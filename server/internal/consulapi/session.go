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

	"github.com/latchkey/latchkey/server/internal/consulmodel"
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
	ServiceChecks *[]consulmodel.ServiceCheck
}

// parseLockDelay applies Consul's quirk: a string is a Go duration, a
// number is nanoseconds, and any result below 1000ns is taken as seconds
// (20 → 20s, "20ns" → 20s, -5 → -5s). A bare string number ("20") is
// invalid.
func parseLockDelay(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return consulmodel.DefaultLockDelay, nil
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
func (h *Handler) newSession(body []byte) (*consulmodel.Session, error) {
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
	se := &consulmodel.Session{ID: newUUID(), Name: req.Name, Node: req.Node, LockDelay: int64(delay), Behavior: req.Behavior, TTL: req.TTL}
	if se.Node == "" {
		se.Node = h.opts.NodeName
	}
	switch se.Behavior {
	case "":
		se.Behavior = consulmodel.BehaviorRelease
	case consulmodel.BehaviorRelease, consulmodel.BehaviorDelete:
	default:
		return nil, serverError("Invalid Behavior setting '%s'", se.Behavior)
	}
	if se.TTL != "" {
		ttl, err := time.ParseDuration(se.TTL)
		if err != nil {
			return nil, serverError("Session TTL '%s' invalid: %v", se.TTL, err)
		}
		if ttl != 0 && (ttl < h.opts.MinSessionTTL || ttl > consulmodel.MaxSessionTTL) {
			return nil, serverError("Invalid Session TTL '%d', must be between [%v=%v]", ttl, h.opts.MinSessionTTL, consulmodel.MaxSessionTTL)
		}
	}
	// Consul's session endpoint: neither Checks nor NodeChecks means
	// serfHealth, whatever ServiceChecks holds.
	switch {
	case req.Checks == nil && req.NodeChecks == nil:
		se.NodeChecks = []string{consulmodel.SerfHealth}
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
	return consulmodel.FormatUUID(b)
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
	if err := h.m.CreateSession(r.Context(), se); err != nil {
		return err
	}
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
	if err := h.m.DestroySession(r.Context(), id); err != nil {
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
	se, err := h.m.RenewSession(id)
	if err != nil {
		return err
	}
	writeJSON(w, q, 0, []*consulmodel.Session{se})
	return nil
}

// sessionRead serves info, list and node: blocking reads of the session
// table.
// collect returns the sessions to answer, read inside tx.
func (h *Handler) sessionRead(w http.ResponseWriter, r *http.Request, q url.Values, watch string, collect func(tx *engine.Tx) ([]*consulmodel.Session, error)) error {
	qo, err := h.parseQuery(q)
	if err != nil {
		return err
	}
	var out []*consulmodel.Session
	idx, err := h.block(r.Context(), qo, h.touchWait(watch), func(tx *engine.Tx) (uint64, error) {
		var err error
		if out, err = collect(tx); out == nil {
			out = []*consulmodel.Session{}
		}
		return consulmodel.SessionsIndex(tx), err
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
		return h.sessionRead(w, r, q, consulmodel.SessionWatchPrefix+arg, func(tx *engine.Tx) ([]*consulmodel.Session, error) {
			se, ok, err := consulmodel.LoadSession(tx, arg)
			if !ok {
				return nil, err
			}
			return []*consulmodel.Session{se}, nil
		})
	case "node":
		if arg == "" {
			return badRequest("Missing node name")
		}
		return h.sessionRead(w, r, q, consulmodel.SessionWatchPrefix, func(tx *engine.Tx) ([]*consulmodel.Session, error) {
			all, err := consulmodel.ListSessions(tx)
			var out []*consulmodel.Session
			for _, se := range all {
				if se.Node == arg {
					out = append(out, se)
				}
			}
			return out, err
		})
	case "list":
		return h.sessionRead(w, r, q, consulmodel.SessionWatchPrefix, consulmodel.ListSessions)
	}
	return errorf(http.StatusNotFound, "404 page not found")
}
