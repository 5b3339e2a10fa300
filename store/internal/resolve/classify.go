package resolve

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/latchkey/latchkey/store"
)

// Unanswered is the kind of a request that got no usable answer (a 5xx,
// a 429, a timeout): a read can simply be retried (store.ErrTransient),
// but a write may or may not have been applied (store.ErrUnknownOutcome).
func Unanswered(write bool) error {
	if write {
		return store.ErrUnknownOutcome
	}
	return store.ErrTransient
}

// Missing is the kind of a 404 answer: a missing bucket (or container) is
// ErrNotFound whatever the request; otherwise a read's or an
// unconditional write's is ErrNotFound, and a conditional write's or
// delete's is its condition failing (If-Match on a missing key):
// ErrConflict.
func Missing(op OpKind, bucket bool) error {
	if !bucket && op.Conditional() {
		return store.ErrConflict
	}
	return store.ErrNotFound
}

// Fallback is the kind of a failure that no backend-specific rule
// recognised, from its HTTP status (0: no response) alone:
//
//	408, 429 or 5xx                     → Unanswered(write) (the service did
//	                                      not get to it, or may have)
//	other 4xx                           → ErrUnsupported (configuration or request error)
//	3xx or an unexpected 2xx            → Unanswered(write)
//	dial error (request never sent)     → ErrTransient
//	other transport error               → Unanswered(write) (timeout, reset, the
//	                                      caller's context ending mid-request)
func Fallback(status int, write bool, err error) error {
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return Unanswered(write)
	case status >= 400:
		return store.ErrUnsupported
	case status != 0:
		return Unanswered(write)
	case NeverSent(err):
		return store.ErrTransient
	default:
		return Unanswered(write)
	}
}

// NeverSent reports whether err proves the request never reached a server
// (it failed while dialling).
func NeverSent(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
