package azblobstore

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
	"github.com/latchkey/latchkey/store/internal/resolve/resolvetest"
)

// respErr builds the error the SDK returns for an Azure error response
// (status, x-ms-error-code), wrapped as the SDK's callers see it.
func respErr(status int, code string) error {
	req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:10000/devstoreaccount1/c/k", nil)
	return fmt.Errorf("upload: %w", &azcore.ResponseError{
		StatusCode: status, ErrorCode: code,
		RawResponse: &http.Response{StatusCode: status, Status: http.StatusText(status), Request: req,
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))},
	})
}

func TestClassify(t *testing.T) {
	cases := []resolvetest.Case{
		{Name: "409 BlobAlreadyExists on create", Op: resolve.OpCondPut, Err: respErr(409, "BlobAlreadyExists"), Want: store.ErrConflict},
		{Name: "412 ConditionNotMet on If-Match put", Op: resolve.OpCondPut, Err: respErr(412, "ConditionNotMet"), Want: store.ErrConflict},
		{Name: "412 ConditionNotMet on If-None-Match put", Op: resolve.OpCondPut, Err: respErr(412, "ConditionNotMet"), Want: store.ErrConflict},
		{Name: "412 ConditionNotMet on If-Match delete", Op: resolve.OpCondPut, Err: respErr(412, "ConditionNotMet"), Want: store.ErrConflict},
		{Name: "412 LeaseIdMissing", Op: resolve.OpCondPut, Err: respErr(412, "LeaseIdMissing"), Want: store.ErrUnsupported},
		{Name: "404 BlobNotFound on If-Match delete", Op: resolve.OpCondPut, Err: respErr(404, "BlobNotFound"), Want: store.ErrConflict},
		{Name: "404 BlobNotFound on Get", Op: resolve.OpRead, Err: respErr(404, "BlobNotFound"), Want: store.ErrNotFound},
		{Name: "404 BlobNotFound on unconditional delete", Op: resolve.OpWrite, Err: respErr(404, "BlobNotFound"), Want: store.ErrNotFound},
		{Name: "404 ContainerNotFound on put", Op: resolve.OpCondPut, Err: respErr(404, "ContainerNotFound"), Want: store.ErrNotFound},
		{Name: "409 ContainerBeingDeleted", Op: resolve.OpWrite, Err: respErr(409, "ContainerBeingDeleted"), Want: store.ErrTransient},
		{Name: "400 InvalidBlockList", Op: resolve.OpCondPut, Err: respErr(400, "InvalidBlockList"), Want: store.ErrTransient},
		{Name: "400 InvalidResourceName", Op: resolve.OpWrite, Err: respErr(400, "InvalidResourceName"), Want: store.ErrInvalidKey},
		{Name: "400 InvalidHeaderValue", Op: resolve.OpCondPut, Err: respErr(400, "InvalidHeaderValue"), Want: store.ErrUnsupported},
		{Name: "403 AuthenticationFailed", Op: resolve.OpRead, Err: respErr(403, "AuthenticationFailed"), Want: store.ErrUnsupported},
		{Name: "413 RequestBodyTooLarge", Op: resolve.OpWrite, Err: respErr(413, "RequestBodyTooLarge"), Want: store.ErrUnsupported},
		{Name: "503 ServerBusy on read", Op: resolve.OpRead, Err: respErr(503, "ServerBusy"), Want: store.ErrTransient},
		{Name: "500 OperationTimedOut on read", Op: resolve.OpRead, Err: respErr(500, "OperationTimedOut"), Want: store.ErrTransient},
		{Name: "503 ServerBusy after write", Op: resolve.OpCondPut, Err: respErr(503, "ServerBusy"), Want: store.ErrUnknownOutcome},
		{Name: "500 OperationTimedOut after write", Op: resolve.OpCondPut, Err: respErr(500, "OperationTimedOut"), Want: store.ErrUnknownOutcome},
		{Name: "500 InternalError after unconditional write", Op: resolve.OpWrite, Err: respErr(500, "InternalError"), Want: store.ErrUnknownOutcome},
		{Name: "408 on read", Op: resolve.OpRead, Err: respErr(408, ""), Want: store.ErrTransient},
		{Name: "429 after write", Op: resolve.OpWrite, Err: respErr(429, ""), Want: store.ErrUnknownOutcome},
	}
	resolvetest.Check(t, append(cases, resolvetest.TransportCases(resolvetest.URLError)...), classify, opError)
}

func TestBlobNames(t *testing.T) {
	for key, name := range map[string]string{
		"a/b":             "a/b",
		`back\slash`:      "back%5Cslash",
		"percent%2Fslash": "percent%252Fslash",
		`%\%`:             "%25%5C%25",
	} {
		if got := blobName(key); got != name {
			t.Errorf("blobName(%q) = %q, want %q", key, got, name)
		}
		if got := keyOf(name); got != key {
			t.Errorf("keyOf(%q) = %q, want %q", name, got, key)
		}
	}
	if got := keyOf("foreign%zz"); got != "foreign%zz" {
		t.Errorf("keyOf of a foreign name = %q", got)
	}
}
