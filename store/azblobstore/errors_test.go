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
		op   opKind
		err  error
		want error
	}{
		{"409 BlobAlreadyExists on create", opCondWrite, respErr(409, "BlobAlreadyExists"), store.ErrConflict},
		{"412 ConditionNotMet on If-Match put", opCondWrite, respErr(412, "ConditionNotMet"), store.ErrConflict},
		{"412 ConditionNotMet on If-None-Match put", opCondWrite, respErr(412, "ConditionNotMet"), store.ErrConflict},
		{"412 ConditionNotMet on If-Match delete", opCondWrite, respErr(412, "ConditionNotMet"), store.ErrConflict},
		{"412 LeaseIdMissing", opCondWrite, respErr(412, "LeaseIdMissing"), store.ErrUnsupported},
		{"404 BlobNotFound on If-Match delete", opCondWrite, respErr(404, "BlobNotFound"), store.ErrConflict},
		{"404 BlobNotFound on Get", opRead, respErr(404, "BlobNotFound"), store.ErrNotFound},
		{"404 BlobNotFound on unconditional delete", opWrite, respErr(404, "BlobNotFound"), store.ErrNotFound},
		{"404 ContainerNotFound on put", opCondWrite, respErr(404, "ContainerNotFound"), store.ErrNotFound},
		{"409 ContainerBeingDeleted", opWrite, respErr(409, "ContainerBeingDeleted"), store.ErrTransient},
		{"400 InvalidBlockList", opCondWrite, respErr(400, "InvalidBlockList"), store.ErrTransient},
		{"400 InvalidResourceName", opWrite, respErr(400, "InvalidResourceName"), store.ErrInvalidKey},
		{"400 InvalidHeaderValue", opCondWrite, respErr(400, "InvalidHeaderValue"), store.ErrUnsupported},
		{"403 AuthenticationFailed", opRead, respErr(403, "AuthenticationFailed"), store.ErrUnsupported},
		{"413 RequestBodyTooLarge", opWrite, respErr(413, "RequestBodyTooLarge"), store.ErrUnsupported},
		{"503 ServerBusy on read", opRead, respErr(503, "ServerBusy"), store.ErrTransient},
		{"500 OperationTimedOut on read", opRead, respErr(500, "OperationTimedOut"), store.ErrTransient},
		{"503 ServerBusy after write", opCondWrite, respErr(503, "ServerBusy"), store.ErrUnknownOutcome},
		{"500 OperationTimedOut after write", opCondWrite, respErr(500, "OperationTimedOut"), store.ErrUnknownOutcome},
		{"500 InternalError after unconditional write", opWrite, respErr(500, "InternalError"), store.ErrUnknownOutcome},
		{"408 on read", opRead, respErr(408, ""), store.ErrTransient},
		{"429 after write", opWrite, respErr(429, ""), store.ErrUnknownOutcome},
		{"connection refused before send", opCondWrite, transportErr(dial), store.ErrTransient},
		{"connection reset after send", opCondWrite, transportErr(reset), store.ErrUnknownOutcome},
		{"reset on read", opRead, transportErr(reset), store.ErrTransient},
		{"unexpected EOF after write", opWrite, transportErr(io.ErrUnexpectedEOF), store.ErrUnknownOutcome},
		{"deadline after write", opCondWrite, transportErr(context.DeadlineExceeded), store.ErrUnknownOutcome},
		{"cancel on read", opRead, transportErr(context.Canceled), store.ErrTransient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := classify(c.op, c.err)
			if f.kind != c.want {
				t.Fatalf("classify = %v (status %d code %q), want %v", f.kind, f.status, f.code, c.want)
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
	if e := opError("put", "k", classify(opCondWrite, respErr(412, "ConditionNotMet")), respErr(412, "ConditionNotMet")); !errors.As(e, &re) || re.ErrorCode != "ConditionNotMet" {
		t.Fatalf("%v hides the *azcore.ResponseError", e)
	}
	if e := opError("put", "k", classify(opCondWrite, transportErr(context.DeadlineExceeded)), transportErr(context.DeadlineExceeded)); !errors.Is(e, context.DeadlineExceeded) {
		t.Fatalf("%v hides context.DeadlineExceeded", e)
	}
	// One line, naming the backend, the key, the kind, the status and code.
	got := fmt.Sprint(opError("put", "jobs/a", classify(opCondWrite, respErr(409, "BlobAlreadyExists")), respErr(409, "BlobAlreadyExists")))
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
