package consulstore

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/store"
)

const backend = "consulstore"

// ErrPermissionDenied is the cause of a 403: the ACL token (Options.Token,
// ?token= in the URL, or CONSUL_HTTP_TOKEN) is missing or lacks
// permission. It comes wrapped in an *store.OpError of kind ErrUnsupported.
var ErrPermissionDenied = errors.New("permission denied by Consul ACLs (check the token: ?token= or CONSUL_HTTP_TOKEN)")

// kindOf maps one failed exchange with Consul onto the store error set.
// status is the HTTP status, 0 when no response arrived; write says
// whether the request could have changed state.
//
//	no response, request never sent (dial)     ErrTransient
//	no response, after sending (timeout, EOF)  read: ErrTransient, write: ErrUnknownOutcome
//	429 Too Many Requests                      ErrTransient (refused before applying)
//	5xx                                        read: ErrTransient, write: ErrUnknownOutcome
//	403 Forbidden                              ErrUnsupported (cause ErrPermissionDenied)
//	other 4xx (400, 404, 405, 413, …)          ErrUnsupported
func kindOf(write bool, status int, err error) error {
	switch {
	case status == 0 && isDialError(err):
		return store.ErrTransient
	case status == 0 || status >= 500:
		if write {
			return store.ErrUnknownOutcome
		}
		return store.ErrTransient
	case status == http.StatusTooManyRequests:
		return store.ErrTransient
	}
	return store.ErrUnsupported
}

// isDialError reports whether err happened while connecting, so no request
// was sent.
func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// statusOf extracts the HTTP status from an error of the api client.
func statusOf(err error) (int, string) {
	var se api.StatusError
	if errors.As(err, &se) {
		return se.Code, se.Body
	}
	var sp *api.StatusError
	if errors.As(err, &sp) {
		return sp.Code, sp.Body
	}
	return 0, ""
}

// opError wraps a failed exchange as an *store.OpError. A done ctx wins:
// the failure is then reported with ctx's error as its cause.
func (s *Store) opError(ctx context.Context, op, key string, write bool, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		kind := store.ErrTransient
		if write {
			kind = store.ErrUnknownOutcome
		}
		return &store.OpError{Op: op, Key: key, Backend: backend, Kind: kind, Err: cerr}
	}
	if s.closed.Load() {
		return store.NewOpError(backend, op, key, store.ErrClosed, nil)
	}
	status, body := statusOf(err)
	oe := &store.OpError{Op: op, Key: key, Backend: backend, Status: status, Kind: kindOf(write, status, err), Err: err}
	if status == http.StatusForbidden {
		oe.Err = errors.Join(ErrPermissionDenied, errors.New(body))
	}
	return oe
}
