package store

import (
	"errors"
	"fmt"
)

// The error set. Every backend reports every failure as an error matching
// exactly one of these (errors.Is), usually inside an *OpError.
var (
	// ErrNotFound: the key does not exist (Get).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the write's condition did not hold; nothing changed.
	ErrConflict = errors.New("precondition failed")
	// ErrTransient: the operation did not happen and may be retried as is
	// (throttling, S3's 409 ConditionalRequestConflict, 503 on a read).
	ErrTransient = errors.New("transient failure")
	// ErrUnknownOutcome: a write may or may not have been applied (timeout,
	// connection reset, 5xx after a conditional write). Re-read to learn.
	ErrUnknownOutcome = errors.New("outcome unknown")
	// ErrUnsupported: the backend cannot perform this operation or
	// condition.
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalidKey: the key breaks the key rules (see ValidateKey).
	ErrInvalidKey = errors.New("invalid key")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
)

// OpError describes a failed operation. Kind is one of the sentinel errors;
// Err, when set, is the underlying cause (an SDK error, a syscall error).
type OpError struct {
	Op      string // "get", "put", "delete", "list", "txn", "watch"
	Key     string // the key or prefix
	Backend string // "memstore", "filestore", "s3store", ...
	Status  int    // the service's status code, if there was one
	Code    string // the service's error code, if there was one
	Kind    error  // the sentinel this failure matches
	Err     error  // the underlying cause, or nil
}

func (e *OpError) Error() string {
	msg := fmt.Sprintf("%s: %s %q: %v", e.Backend, e.Op, e.Key, e.Kind)
	if e.Status != 0 {
		msg += fmt.Sprintf(" (status %d", e.Status)
		if e.Code != "" {
			msg += " " + e.Code
		}
		msg += ")"
	}
	var ke *keyError
	switch {
	case errors.As(e.Err, &ke) && ke.key == e.Key:
		msg += ": " + ke.why // the key is already named
	case e.Err != nil:
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap makes errors.Is match both the sentinel and the cause.
func (e *OpError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// NewOpError returns an *OpError of the given kind, with no status, for
// backend's op on key; cause, when not nil, is the underlying error.
func NewOpError(backend, op, key string, kind, cause error) *OpError {
	return &OpError{Op: op, Key: key, Backend: backend, Kind: kind, Err: cause}
}
