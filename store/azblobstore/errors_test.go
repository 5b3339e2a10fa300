package azblobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
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

// transportErr builds the error of a request that got no response.
func transportErr(cause error) error {
	return &url.Error{Op: "Put", URL: "http://127.0.0.1:10000/devstoreaccount1/c/k", Err: cause}
}

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	cases := []struct {
		name string
		op   resolve.OpKind
		err  error
		want error
	}{
		{"409 BlobAlreadyExists on create", resolve.OpCondPut, respErr(409, "BlobAlreadyExists"), store.ErrConflict},
		{"412 ConditionNotMet on If-Match put", resolve.OpCondPut, respErr(412, "ConditionNotMet"), store.ErrConflict},
		{"412 ConditionNotMet on If-None-Match put", resolve.OpCondPut, respErr(412, "ConditionNotMet"), store.ErrConflict},
		{"412 ConditionNotMet on If-Match delete", resolve.OpCondPut, respErr(412, "ConditionNotMet"), store.ErrConflict},
		{"412 LeaseIdMissing", resolve.OpCondPut, respErr(412, "LeaseIdMissing"), store.ErrUnsupported},
		{"404 BlobNotFound on If-Match delete", resolve.OpCondPut, respErr(404, "BlobNotFound"), store.ErrConflict},
		{"404 BlobNotFound on Get", resolve.OpRead, respErr(404, "BlobNotFound"), store.ErrNotFound},
		{"404 BlobNotFound on unconditional delete", resolve.OpWrite, respErr(404, "BlobNotFound"), store.ErrNotFound},
		{"404 ContainerNotFound on put", resolve.OpCondPut, respErr(404, "ContainerNotFound"), store.ErrNotFound},
		{"409 ContainerBeingDeleted", resolve.OpWrite, respErr(409, "ContainerBeingDeleted"), store.ErrTransient},
		{"400 InvalidBlockList", resolve.OpCondPut, respErr(400, "InvalidBlockList"), store.ErrTransient},
		{"400 InvalidResourceName", resolve.OpWrite, respErr(400, "InvalidResourceName"), store.ErrInvalidKey},
		{"400 InvalidHeaderValue", resolve.OpCondPut, respErr(400, "InvalidHeaderValue"), store.ErrUnsupported},
		{"403 AuthenticationFailed", resolve.OpRead, respErr(403, "AuthenticationFailed"), store.ErrUnsupported},
		{"413 RequestBodyTooLarge", resolve.OpWrite, respErr(413, "RequestBodyTooLarge"), store.ErrUnsupported},
		{"503 ServerBusy on read", resolve.OpRead, respErr(503, "ServerBusy"), store.ErrTransient},
		{"500 OperationTimedOut on read", resolve.OpRead, respErr(500, "OperationTimedOut"), store.ErrTransient},
		{"503 ServerBusy after write", resolve.OpCondPut, respErr(503, "ServerBusy"), store.ErrUnknownOutcome},
		{"500 OperationTimedOut after write", resolve.OpCondPut, respErr(500, "OperationTimedOut"), store.ErrUnknownOutcome},
		{"500 InternalError after unconditional write", resolve.OpWrite, respErr(500, "InternalError"), store.ErrUnknownOutcome},
		{"408 on read", resolve.OpRead, respErr(408, ""), store.ErrTransient},
		{"429 after write", resolve.OpWrite, respErr(429, ""), store.ErrUnknownOutcome},
		{"connection refused before send", resolve.OpCondPut, transportErr(dial), store.ErrTransient},
		{"connection reset after send", resolve.OpCondPut, transportErr(reset), store.ErrUnknownOutcome},
		{"reset on read", resolve.OpRead, transportErr(reset), store.ErrTransient},
		{"unexpected EOF after write", resolve.OpWrite, transportErr(io.ErrUnexpectedEOF), store.ErrUnknownOutcome},
		{"deadline after write", resolve.OpCondPut, transportErr(context.DeadlineExceeded), store.ErrUnknownOutcome},
		{"cancel on read", resolve.OpRead, transportErr(context.Canceled), store.ErrTransient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := classify(c.op, c.err)
			if f.Kind != c.want {
				t.Fatalf("classify = %v (status %d code %q), want %v", f.Kind, f.Status, f.Code, c.want)
			}
			e := opError("put", "k", f, c.err)
			if !errors.Is(e, c.want) || !errors.Is(e, c.err) {
				t.Fatalf("%v does not match both %v and its cause", e, c.want)
			}
			n := 0
			for _, s := range []error{store.ErrNotFound, store.ErrConflict, store.ErrTransient, store.ErrUnknownOutcome, store.ErrUnsupported, store.ErrInvalidKey} {
				if errors.Is(e, s) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%v matches %d sentinels", e, n)
			}
		})
	}
	// The SDK's error stays reachable, the context's too.
	var re *azcore.ResponseError
	if e := opError("put", "k", classify(resolve.OpCondPut, respErr(412, "ConditionNotMet")), respErr(412, "ConditionNotMet")); !errors.As(e, &re) || re.ErrorCode != "ConditionNotMet" {
		t.Fatalf("%v hides the *azcore.ResponseError", e)
	}
	if e := opError("put", "k", classify(resolve.OpCondPut, transportErr(context.DeadlineExceeded)), transportErr(context.DeadlineExceeded)); !errors.Is(e, context.DeadlineExceeded) {
		t.Fatalf("%v hides context.DeadlineExceeded", e)
	}
	// One line, naming the backend, the key, the kind, the status and code.
	got := fmt.Sprint(opError("put", "jobs/a", classify(resolve.OpCondPut, respErr(409, "BlobAlreadyExists")), respErr(409, "BlobAlreadyExists")))
	want := `azblobstore: put "jobs/a": precondition failed (status 409 BlobAlreadyExists): upload: PUT http://127.0.0.1:10000/devstoreaccount1/c/k`
	if got != want {
		t.Fatalf("message\n %q\nwant\n %q", got, want)
	}
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
