package gcsstore

import (
	"errors"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

const backend = "gcsstore"

// opKind says what kind of request failed, which decides how an ambiguous
// failure is read.
type opKind int

const (
	opRead       opKind = iota // get, attrs, list: never changes anything
	opWrite                    // upload or delete without a precondition
	opCondDelete               // delete with ifGenerationMatch
	opCondUpload               // upload with ifGenerationMatch
)

// failure is the classification of one client error.
type failure struct {
	kind   error // a store sentinel
	status int
	code   string // the first googleapi error reason, e.g. "conditionNotMet"
}

// classify maps a client error onto the store error set. It is the one
// place that knows GCS's statuses and reasons:
//
//	412 (conditionNotMet)                → ErrConflict
//	storage.ErrBucketNotExist            → ErrNotFound (any op)
//	404 / ErrObjectNotExist on a read    → ErrNotFound
//	404 on a conditional delete          → ErrConflict (the object is gone)
//	404 on an upload                     → ErrNotFound: the bucket is
//	                                       missing (a missing object fails
//	                                       an upload's precondition with 412)
//	408, 429, 5xx on a read              → ErrTransient
//	408, 429, 5xx after a write          → ErrUnknownOutcome: GCS throttles
//	                                       at about one write per second per
//	                                       object, and a 429 does not prove
//	                                       the write was not applied
//	other 4xx (400, 401, 403, 409, …)    → ErrUnsupported (configuration or
//	                                       request error)
//	dial error (request never sent)      → ErrTransient
//	other transport error on a read      → ErrTransient
//	other transport error after a write  → ErrUnknownOutcome (timeout,
//	                                       reset, the caller's context
//	                                       ending mid-request)
func classify(op opKind, err error) failure {
	var f failure
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		f.status = ge.Code
		if len(ge.Errors) > 0 {
			f.code = ge.Errors[0].Reason
		}
	}
	write := op != opRead
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		f.kind = store.ErrNotFound
		if f.status == 0 {
			f.status = http.StatusNotFound
		}
	case f.status == http.StatusPreconditionFailed || f.code == "conditionNotMet":
		f.kind = store.ErrConflict
	case f.status == http.StatusNotFound || errors.Is(err, storage.ErrObjectNotExist):
		f.kind = store.ErrNotFound
		if op == opCondDelete && !errors.Is(err, storage.ErrBucketNotExist) {
			f.kind = store.ErrConflict
		}
		if f.status == 0 {
			f.status = http.StatusNotFound
		}
	case f.status == http.StatusRequestTimeout || f.status == http.StatusTooManyRequests || f.status >= 500:
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
