package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// apiErr builds the error aws-sdk-go-v2 returns for an S3 error response.
func apiErr(status int, code string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: code},
		},
	}}
}

// transportErr builds the error of a request that got no response.
func transportErr(cause error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject",
		Err: &smithyhttp.RequestSendError{Err: cause}}
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
		{"412 on conditional put", resolve.OpCondPut, apiErr(412, "PreconditionFailed"), store.ErrConflict},
		{"409 ConditionalRequestConflict", resolve.OpCondPut, apiErr(409, "ConditionalRequestConflict"), store.ErrTransient},
		{"404 NoSuchKey on If-Match put", resolve.OpCondPut, apiErr(404, "NoSuchKey"), store.ErrConflict},
		{"404 NoSuchKey on Get", resolve.OpRead, apiErr(404, "NoSuchKey"), store.ErrNotFound},
		{"404 NotFound on Head", resolve.OpRead, apiErr(404, "NotFound"), store.ErrNotFound},
		{"404 NoSuchBucket on put", resolve.OpCondPut, apiErr(404, "NoSuchBucket"), store.ErrNotFound},
		{"501 NotImplemented", resolve.OpCondPut, apiErr(501, "NotImplemented"), store.ErrUnsupported},
		{"503 SlowDown on read", resolve.OpRead, apiErr(503, "SlowDown"), store.ErrTransient},
		{"503 SlowDown on write", resolve.OpCondPut, apiErr(503, "SlowDown"), store.ErrUnknownOutcome},
		{"500 after write", resolve.OpWrite, apiErr(500, "InternalError"), store.ErrUnknownOutcome},
		{"500 on read", resolve.OpRead, apiErr(500, "InternalError"), store.ErrTransient},
		{"429 on read", resolve.OpRead, apiErr(429, "TooManyRequests"), store.ErrTransient},
		{"403 AccessDenied", resolve.OpRead, apiErr(403, "AccessDenied"), store.ErrUnsupported},
		{"403 SignatureDoesNotMatch", resolve.OpCondPut, apiErr(403, "SignatureDoesNotMatch"), store.ErrUnsupported},
		{"400 RequestTimeout", resolve.OpCondPut, apiErr(400, "RequestTimeout"), store.ErrTransient},
		{"400 KeyTooLongError", resolve.OpWrite, apiErr(400, "KeyTooLongError"), store.ErrInvalidKey},
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
			// Exactly one sentinel.
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
	// The context's own error stays reachable.
	e := opError("put", "k", classify(resolve.OpCondPut, transportErr(context.DeadlineExceeded)), transportErr(context.DeadlineExceeded))
	if !errors.Is(e, context.DeadlineExceeded) {
		t.Fatalf("%v hides context.DeadlineExceeded", e)
	}
	if got := fmt.Sprint(opError("put", "jobs/a", classify(resolve.OpCondPut, apiErr(412, "PreconditionFailed")), nil)); got != `s3store: put "jobs/a": precondition failed (status 412 PreconditionFailed)` {
		t.Fatalf("message %q", got)
	}
}
