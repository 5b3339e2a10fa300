package consulmodel

import (
	"errors"
	"fmt"
)

// Code is the kind of a refusal; the HTTP layer (server/internal/consulapi)
// answers each with Consul's status for it.
type Code int

// The refusals of the model.
const (
	// Failed: the op's condition did not hold (a cas on a stale index, a
	// lock held by another session, a failed check-*). The KV endpoint
	// answers 200 false; /v1/txn a 409 entry carrying the message.
	Failed Code = iota + 1
	// Invalid: input Consul answers with 400.
	Invalid
	// Rejected: input Consul refuses with 500 and its text (a missing or
	// unknown session, a missing registration, a bad session Behavior).
	Rejected
	// NotFound: what the request names does not exist (404).
	NotFound
	// TooMany: a limit of the model was reached (429).
	TooMany
)

// Error is a refusal of the model: nothing was written. Msg is Consul's
// text for it.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func failf(format string, args ...any) error { return errorf(Failed, format, args...) }

// IsFailure reports whether err is an op whose condition did not hold
// (Code Failed).
func IsFailure(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == Failed
}

// errMissingSession is Consul's answer to acquire or release without a
// session.
var errMissingSession = &Error{Code: Rejected, Msg: "missing session"}
