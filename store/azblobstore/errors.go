package azblobstore

import (
	"errors"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

const backend = "azblobstore"

const codeContainerNotFound = string(bloberror.ContainerNotFound)

// classify maps an SDK error onto the store error set. It is the one place
// that knows Azure Blob's statuses and codes:
//
//	409 BlobAlreadyExists (If-None-Match: * lost)  → ErrConflict
//	412 ConditionNotMet (If-Match lost, or missing) → ErrConflict
//	412 Lease* (someone holds an Azure lease)       → ErrUnsupported
//	404 ContainerNotFound                           → ErrNotFound (any op)
//	404 on a conditional write or delete            → ErrConflict
//	404 on a read                                   → ErrNotFound
//	409 other (ContainerBeingDeleted, …)            → ErrTransient (nothing happened)
//	400 InvalidResourceName, InvalidUri             → ErrInvalidKey
//	400 InvalidBlockList (blocks collected by a     → ErrTransient
//	    concurrent commit)
//	other 4xx (403, 400, 413, …)                    → ErrUnsupported (configuration or request error)
//	408, 429, 5xx on a read                         → ErrTransient (503 ServerBusy, 500 OperationTimedOut)
//	408, 429, 5xx after a write                     → ErrUnknownOutcome
//	dial error (request never sent)                 → ErrTransient
//	other transport error on a read                 → ErrTransient
//	other transport error after a write             → ErrUnknownOutcome (timeout, reset)
//	the caller's context ended                      → as a transport error, with the
//	                                                  context's error kept as the cause
func classify(op resolve.OpKind, err error) resolve.Failure {
	var f resolve.Failure
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		f.Status, f.Code = re.StatusCode, re.ErrorCode
	}
	write := op.Write()
	switch {
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists):
		f.Kind = store.ErrConflict
	case f.Status == http.StatusPreconditionFailed && strings.HasPrefix(f.Code, "Lease"):
		f.Kind = store.ErrUnsupported
	case f.Status == http.StatusPreconditionFailed:
		f.Kind = store.ErrConflict
	case f.Status == http.StatusNotFound:
		f.Kind = resolve.Missing(op, f.Code == codeContainerNotFound)
	case f.Status == http.StatusConflict:
		f.Kind = store.ErrTransient
	case f.Status == http.StatusBadRequest && (f.Code == string(bloberror.InvalidResourceName) || f.Code == string(bloberror.InvalidURI)):
		f.Kind = store.ErrInvalidKey
	case f.Status == http.StatusBadRequest && f.Code == string(bloberror.InvalidBlockList):
		f.Kind = store.ErrTransient
	default:
		// 408, 429, 5xx, other 4xx, 3xx, dial and transport errors:
		// resolve.Fallback.
		f.Kind = resolve.Fallback(f.Status, write, err)
	}
	return f
}

// opError wraps a classified resolve.Failure in the store's error type. An
// *azcore.ResponseError prints a whole response dump; the cause keeps it
// reachable with errors.As but prints only its first line.
func opError(op, key string, f resolve.Failure, cause error) *store.OpError {
	var re *azcore.ResponseError
	if cause != nil && errors.As(cause, &re) {
		cause = shortError{cause}
	}
	return f.OpError(backend, op, key, cause)
}

// shortError prints the first line of an SDK error.
type shortError struct{ err error }

func (e shortError) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\n")
	return strings.TrimSpace(msg)
}

func (e shortError) Unwrap() error { return e.err }
