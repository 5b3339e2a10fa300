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
func classify(op resolve.OpKind, err error) resolve.Failure {
	var f resolve.Failure
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		f.Status = ge.Code
		if len(ge.Errors) > 0 {
			f.Code = ge.Errors[0].Reason
		}
	}
	write := op.Write()
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		f.Kind = store.ErrNotFound
		if f.Status == 0 {
			f.Status = http.StatusNotFound
		}
	case f.Status == http.StatusPreconditionFailed || f.Code == "conditionNotMet":
		f.Kind = store.ErrConflict
	case f.Status == http.StatusNotFound || errors.Is(err, storage.ErrObjectNotExist):
		f.Kind = store.ErrNotFound
		if op == resolve.OpCondDelete && !errors.Is(err, storage.ErrBucketNotExist) {
			f.Kind = store.ErrConflict
		}
		if f.Status == 0 {
			f.Status = http.StatusNotFound
		}
	case f.Status == http.StatusRequestTimeout || f.Status == http.StatusTooManyRequests || f.Status >= 500:
		f.Kind = resolve.Unanswered(write)
	default:
		// Other 4xx, 3xx, dial and transport errors.
		f.Kind = resolve.Fallback(f.Status, write, err)
	}
	return f
}

// opError wraps a classified resolve.Failure in the store's error type.
func opError(op, key string, f resolve.Failure, cause error) *store.OpError {
	return f.OpError(backend, op, key, cause)
}
