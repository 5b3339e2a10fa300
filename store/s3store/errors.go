package s3store

import (
	"net/http"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

const backend = "s3store"

// codeNoSuchBucket is S3's error code for a missing bucket.
const codeNoSuchBucket = "NoSuchBucket"

// classify maps a client error (a *responseError, or the transport's)
// onto the store error set. It is the one place
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
//	408, 429, 5xx on a read                → ErrTransient (503 SlowDown included)
//	408, 429, 5xx after a write            → ErrUnknownOutcome
//	other 4xx (403, 400, 405, 411, …)      → ErrUnsupported (configuration or request error)
//	transport error on a read              → ErrTransient
//	dial error (request never sent)        → ErrTransient
//	other transport error after a write    → ErrUnknownOutcome (timeout, reset)
//	the caller's context ended             → ErrUnknownOutcome for writes, ErrTransient for
//	                                         reads, with the context's error kept as the cause
func classify(op resolve.OpKind, err error) resolve.Failure {
	var f resolve.Failure
	f.Status, f.Code = errorOf(err)
	write := op.Write()
	switch {
	case f.Status == http.StatusPreconditionFailed:
		f.Kind = store.ErrConflict
	case f.Status == http.StatusConflict:
		f.Kind = store.ErrTransient
	case f.Status == http.StatusNotFound:
		f.Kind = resolve.Missing(op, f.Code == codeNoSuchBucket)
	case f.Status == http.StatusNotImplemented:
		f.Kind = store.ErrUnsupported
	case f.Status == http.StatusBadRequest && f.Code == "KeyTooLongError":
		f.Kind = store.ErrInvalidKey
	case f.Status == http.StatusBadRequest && f.Code == "RequestTimeout":
		f.Kind = store.ErrTransient
	default:
		// 408, 429, 5xx, other 4xx, 3xx, dial and transport errors:
		// resolve.Fallback.
		f.Kind = resolve.Fallback(f.Status, write, err)
	}
	return f
}

// opError wraps a classified resolve.Failure in the store's error type.
func opError(op, key string, f resolve.Failure, cause error) *store.OpError {
	return f.OpError(backend, op, key, cause)
}
