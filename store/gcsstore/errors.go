package gcsstore

import (
	"errors"
	"net/http"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

const backend = "gcsstore"

// classify maps a request's error onto the store error set. It is the one
// place that knows GCS's statuses and reasons:
//
//	412 (conditionNotMet)                → ErrConflict
//	404 on a read (object or bucket)     → ErrNotFound
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
//	other transport error, or a 2xx      → ErrTransient on a read,
//	answer the store cannot use            ErrUnknownOutcome after a write
//	                                       (timeout, reset, the caller's
//	                                       context ending mid-request)
//
// Delete treats a 404 on an unconditional delete as done.
func classify(op resolve.OpKind, err error) resolve.Failure {
	var f resolve.Failure
	var ae *apiError
	if errors.As(err, &ae) {
		f.Status, f.Code = ae.Code, ae.Reason
	}
	write := op.Write()
	switch {
	case f.Status == http.StatusPreconditionFailed || f.Code == "conditionNotMet":
		f.Kind = store.ErrConflict
	case f.Status == http.StatusNotFound:
		f.Kind = store.ErrNotFound
		if op == resolve.OpCondDelete {
			f.Kind = store.ErrConflict
		}
	default:
		// 408, 429, 5xx, other 4xx, 3xx, dial and transport errors,
		// unusable answers: resolve.Fallback.
		f.Kind = resolve.Fallback(f.Status, write, err)
	}
	return f
}

// opError wraps a classified resolve.Failure in the store's error type.
func opError(op, key string, f resolve.Failure, cause error) *store.OpError {
	return f.OpError(backend, op, key, cause)
}
