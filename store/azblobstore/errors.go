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

// opKind says what kind of request failed, which decides how an ambiguous
// failure is read.
type opKind int

const (
	opRead      opKind = iota // Get Blob, Get Blob Properties, List Blobs, Put Block: change nothing visible
	opWrite                   // Put Blob, Put Block List, Delete Blob without condition
	opCondWrite               // the same with If-Match / If-None-Match
)

// failure is the classification of one SDK error.
type failure struct {
	kind   error // a store sentinel
	status int
	code   string
}

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
func classify(op opKind, err error) failure {
	var f failure
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		f.status, f.code = re.StatusCode, re.ErrorCode
	}
	write := op != opRead
	switch {
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists):
		f.kind = store.ErrConflict
	case f.status == http.StatusPreconditionFailed && strings.HasPrefix(f.code, "Lease"):
		f.kind = store.ErrUnsupported
	case f.status == http.StatusPreconditionFailed:
		f.kind = store.ErrConflict
	case f.status == http.StatusNotFound && f.code == codeContainerNotFound:
		f.kind = store.ErrNotFound
	case f.status == http.StatusNotFound && op == opCondWrite:
		f.kind = store.ErrConflict
	case f.status == http.StatusNotFound:
		f.kind = store.ErrNotFound
	case f.status == http.StatusConflict:
		f.kind = store.ErrTransient
	case f.status == http.StatusBadRequest && (f.code == string(bloberror.InvalidResourceName) || f.code == string(bloberror.InvalidURI)):
		f.kind = store.ErrInvalidKey
	case f.status == http.StatusBadRequest && f.code == string(bloberror.InvalidBlockList):
		f.kind = store.ErrTransient
	case f.status == http.StatusRequestTimeout || f.status == http.StatusTooManyRequests || f.status >= 500:
		f.kind = resolve.Unanswered(write)
	default:
		// Other 4xx, 3xx, dial and transport errors.
		f.kind = resolve.Fallback(f.status, write, err)
	}
	return f
}

// opError wraps a classified failure in the store's error type. An
// *azcore.ResponseError prints a whole response dump; the cause keeps it
// reachable with errors.As but prints only its first line.
func opError(op, key string, f failure, cause error) *store.OpError {
	var re *azcore.ResponseError
	if cause != nil && errors.As(cause, &re) {
		cause = shortError{cause}
	}
	return &store.OpError{Op: op, Key: key, Backend: backend, Status: f.status, Code: f.code, Kind: f.kind, Err: cause}
}

// shortError prints the first line of an SDK error.
type shortError struct{ err error }

func (e shortError) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\n")
	return strings.TrimSpace(msg)
}

func (e shortError) Unwrap() error { return e.err }
