package s3store

import (
	"errors"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

const backend = "s3store"

// opKind says what kind of request failed, which decides how an ambiguous
// failure is read.
type opKind int

const (
	opRead      opKind = iota // GET, HEAD, LIST: never changes anything
	opWrite                   // PUT, DELETE without condition
	opCondWrite               // PUT or DELETE with If-Match / If-None-Match
)

// failure is the classification of one SDK error.
type failure struct {
	kind   error // a store sentinel
	status int
	code   string
}

// classify maps an SDK error onto the store error set. It is the one place
// that knows S3's statuses and codes:
//
//	412 PreconditionFailed                 → ErrConflict
//	409 (ConditionalRequestConflict, …)    → ErrTransient
//	404 NoSuchBucket                       → ErrNotFound (any op)
//	404 on a conditional write or delete   → ErrConflict (If-Match on a missing key)
//	404 on a read                          → ErrNotFound
//	501 NotImplemented                     → ErrUnsupported
//	400 KeyTooLongError                    → ErrInvalidKey
//	400 RequestTimeout                     → ErrTransient (the body never arrived)
//	other 4xx (403, 400, 405, 411, …)      → ErrUnsupported (configuration or request error)
//	429, 5xx on a read                     → ErrTransient (503 SlowDown included)
//	429, 5xx after a write                 → ErrUnknownOutcome
//	transport error on a read              → ErrTransient
//	dial error (request never sent)        → ErrTransient
//	other transport error after a write    → ErrUnknownOutcome (timeout, reset)
//	the caller's context ended             → ErrUnknownOutcome for writes, ErrTransient for
//	                                         reads, with the context's error kept as the cause
func classify(op opKind, err error) failure {
	var f failure
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		f.status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		f.code = ae.ErrorCode()
	}
	write := op != opRead
	switch {
	case f.status == http.StatusPreconditionFailed:
		f.kind = store.ErrConflict
	case f.status == http.StatusConflict:
		f.kind = store.ErrTransient
	case f.status == http.StatusNotFound && f.code == "NoSuchBucket":
		f.kind = store.ErrNotFound
	case f.status == http.StatusNotFound && op == opCondWrite:
		f.kind = store.ErrConflict
	case f.status == http.StatusNotFound:
		f.kind = store.ErrNotFound
	case f.status == http.StatusNotImplemented:
		f.kind = store.ErrUnsupported
	case f.status == http.StatusBadRequest && f.code == "KeyTooLongError":
		f.kind = store.ErrInvalidKey
	case f.status == http.StatusBadRequest && f.code == "RequestTimeout":
		f.kind = store.ErrTransient
	case f.status == http.StatusTooManyRequests || f.status >= 500:
		f.kind = resolve.Unanswered(write)
	default:
		// Other 4xx, 3xx, dial and transport errors.
		f.kind = resolve.Fallback(f.status, write, err)
	}
	return f
}

// opError wraps a classified failure in the store's error type.
func opError(op, key string, f failure, cause error) *store.OpError {
	return &store.OpError{Op: op, Key: key, Backend: backend, Status: f.status, Code: f.code, Kind: f.kind, Err: cause}
}
