package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
	"github.com/latchkey/latchkey/store/internal/resolve/resolvetest"
)

// apiErr builds the client's error for an S3 error response.
func apiErr(status int, code string) error {
	return &responseError{Op: "PutObject", Status: status, Code: code, Message: code}
}

func TestClassify(t *testing.T) {
	cases := []resolvetest.Case{
		{Name: "412 on conditional put", Op: resolve.OpCondPut, Err: apiErr(412, "PreconditionFailed"), Want: store.ErrConflict},
		{Name: "409 ConditionalRequestConflict", Op: resolve.OpCondPut, Err: apiErr(409, "ConditionalRequestConflict"), Want: store.ErrTransient},
		{Name: "404 NoSuchKey on If-Match put", Op: resolve.OpCondPut, Err: apiErr(404, "NoSuchKey"), Want: store.ErrConflict},
		{Name: "404 NoSuchKey on Get", Op: resolve.OpRead, Err: apiErr(404, "NoSuchKey"), Want: store.ErrNotFound},
		{Name: "404 NotFound on Head", Op: resolve.OpRead, Err: apiErr(404, "NotFound"), Want: store.ErrNotFound},
		{Name: "404 NoSuchBucket on put", Op: resolve.OpCondPut, Err: apiErr(404, "NoSuchBucket"), Want: store.ErrNotFound},
		{Name: "501 NotImplemented", Op: resolve.OpCondPut, Err: apiErr(501, "NotImplemented"), Want: store.ErrUnsupported},
		{Name: "503 SlowDown on read", Op: resolve.OpRead, Err: apiErr(503, "SlowDown"), Want: store.ErrTransient},
		{Name: "503 SlowDown on write", Op: resolve.OpCondPut, Err: apiErr(503, "SlowDown"), Want: store.ErrUnknownOutcome},
		{Name: "500 after write", Op: resolve.OpWrite, Err: apiErr(500, "InternalError"), Want: store.ErrUnknownOutcome},
		{Name: "500 on read", Op: resolve.OpRead, Err: apiErr(500, "InternalError"), Want: store.ErrTransient},
		{Name: "429 on read", Op: resolve.OpRead, Err: apiErr(429, "TooManyRequests"), Want: store.ErrTransient},
		{Name: "403 AccessDenied", Op: resolve.OpRead, Err: apiErr(403, "AccessDenied"), Want: store.ErrUnsupported},
		{Name: "403 SignatureDoesNotMatch", Op: resolve.OpCondPut, Err: apiErr(403, "SignatureDoesNotMatch"), Want: store.ErrUnsupported},
		{Name: "400 RequestTimeout", Op: resolve.OpCondPut, Err: apiErr(400, "RequestTimeout"), Want: store.ErrTransient},
		{Name: "400 KeyTooLongError", Op: resolve.OpWrite, Err: apiErr(400, "KeyTooLongError"), Want: store.ErrInvalidKey},
		{Name: "408 on read", Op: resolve.OpRead, Err: apiErr(408, "RequestTimeout"), Want: store.ErrTransient},
		{Name: "408 after write", Op: resolve.OpCondPut, Err: apiErr(408, "RequestTimeout"), Want: store.ErrUnknownOutcome},
	}
	resolvetest.Check(t, append(cases, resolvetest.TransportCases(resolvetest.URLError)...), classify, opError)
	// The context's own error stays reachable.
	e := opError("put", "k", classify(resolve.OpCondPut, resolvetest.URLError(context.DeadlineExceeded)), resolvetest.URLError(context.DeadlineExceeded))
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
