package resolve

import "github.com/latchkey/latchkey/store"

// OpKind says what kind of request failed, which decides how an ambiguous
// failure is read: a read that got no answer changed nothing, a write may
// have been applied, and a conditional write's 404 is its condition
// failing.
type OpKind int

const (
	OpRead       OpKind = iota // a read, a listing: never changes anything
	OpWrite                    // a put or delete without a condition
	OpCondPut                  // a put with If-Match / If-None-Match (or its equivalent)
	OpCondDelete               // a delete with If-Match (or its equivalent)
)

// Write reports whether a request of kind k may change the store.
func (k OpKind) Write() bool { return k != OpRead }

// Conditional reports whether k carries a condition.
func (k OpKind) Conditional() bool { return k == OpCondPut || k == OpCondDelete }

// Failure is an object-store backend's classification of one failed
// request: the store sentinel it matches and the service's status and
// error code, if any. Each backend's classify function is the one place
// that builds it from an SDK error.
type Failure struct {
	Kind   error  // a store sentinel
	Status int    // the HTTP status, 0 when there was no response
	Code   string // the service's error code or reason, if any
}

// OpError wraps f in the store's error type for backend's op on key.
func (f Failure) OpError(backend, op, key string, cause error) *store.OpError {
	return &store.OpError{Op: op, Key: key, Backend: backend, Status: f.Status, Code: f.Code, Kind: f.Kind, Err: cause}
}
