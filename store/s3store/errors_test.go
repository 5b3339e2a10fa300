package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// apiErr builds the client's error for an S3 error response.
func apiErr(status int, code string) error {
	return &responseError{Op: "PutObject", Status: status, Code: code, Message: code}
}

// transportErr builds the error of a request that got no response, as
// net/http's client returns it.
func transportErr(cause error) error {
	return &url.Error{Op: "Put", URL: "http://127.0.0.1:1/b/k", Err: cause}
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

// TestErrorAnswers: the client turns S3's answers into the errors
// classify reads: the status with the XML document's code, a bodiless
// HEAD 404 as the status alone, and a body that is not S3's error
// document as the status alone.
func TestErrorAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/b/cond":
			w.WriteHeader(http.StatusPreconditionFailed)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`)
		case "/b/html":
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, `<html>bad gateway</html>`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c, err := newClient(srv.Client(), nil, "us-east-1", srv.URL, "b")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.putObject(ctx, "cond", "n", http.Header{"If-Match": {`"x"`}}, nil)
	if st, code := errorOf(err); st != 412 || code != "PreconditionFailed" || classify(resolve.OpCondPut, err).Kind != store.ErrConflict {
		t.Errorf("412 answer: %v (status %d code %q)", err, st, code)
	}
	_, err = c.headObject(ctx, "gone")
	if st, code := errorOf(err); st != 404 || code != "" || classify(resolve.OpRead, err).Kind != store.ErrNotFound {
		t.Errorf("HEAD 404: %v (status %d code %q)", err, st, code)
	}
	err = c.deleteObject(ctx, "html", nil)
	if st, code := errorOf(err); st != 502 || code != "" || classify(resolve.OpWrite, err).Kind != store.ErrUnknownOutcome {
		t.Errorf("502 with an HTML body: %v (status %d code %q)", err, st, code)
	}
}
