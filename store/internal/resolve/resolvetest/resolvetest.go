// Package resolvetest checks a backend's classify function, the one place
// that turns its SDK's errors into a resolve.Failure: each case names the
// kind of operation, the error and the store sentinel it must give, and
// Check also requires that the backend's *store.OpError matches that
// sentinel, the cause and no other sentinel. TransportCases are the
// requests that got no answer, which every HTTP backend sorts alike.
package resolvetest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// Case is one error a backend's classify must sort.
type Case struct {
	Name string
	Op   resolve.OpKind
	Err  error
	Want error // the store sentinel
}

// TransportCases are the failures of requests that got no response:
// refused while dialling (never sent), reset, cut short, or ended by the
// caller's context. wrap builds the error the backend's SDK returns for
// one from its cause.
func TransportCases(wrap func(cause error) error) []Case {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	return []Case{
		{"connection refused before send", resolve.OpCondPut, wrap(dial), store.ErrTransient},
		{"connection reset after send", resolve.OpCondPut, wrap(reset), store.ErrUnknownOutcome},
		{"reset on read", resolve.OpRead, wrap(reset), store.ErrTransient},
		{"unexpected EOF after write", resolve.OpWrite, wrap(io.ErrUnexpectedEOF), store.ErrUnknownOutcome},
		{"deadline after write", resolve.OpCondPut, wrap(context.DeadlineExceeded), store.ErrUnknownOutcome},
		{"cancel on read", resolve.OpRead, wrap(context.Canceled), store.ErrTransient},
	}
}

// URLError wraps cause as net/http's client returns the failure of a
// request that got no response: the wrap TransportCases wants for a
// backend that speaks HTTP through net/http (directly or through an SDK
// that passes the client's error on).
func URLError(cause error) error {
	return &url.Error{Op: "Put", URL: "http://127.0.0.1:1/bucket/key", Err: cause}
}

// sentinels are the store's error kinds; an OpError matches exactly one.
var sentinels = []error{store.ErrNotFound, store.ErrConflict, store.ErrTransient, store.ErrUnknownOutcome, store.ErrUnsupported, store.ErrInvalidKey}

// Check runs each case as a subtest: classify gives its sentinel, and
// opError's error matches the sentinel, the cause, and no other sentinel.
func Check(t *testing.T, cases []Case, classify func(resolve.OpKind, error) resolve.Failure,
	opError func(op, key string, f resolve.Failure, cause error) *store.OpError) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			f := classify(c.Op, c.Err)
			if f.Kind != c.Want {
				t.Fatalf("classify = %v (status %d code %q), want %v", f.Kind, f.Status, f.Code, c.Want)
			}
			e := opError("put", "k", f, c.Err)
			if !errors.Is(e, c.Want) || !errors.Is(e, c.Err) {
				t.Fatalf("%v does not match both %v and its cause", e, c.Want)
			}
			n := 0
			for _, s := range sentinels {
				if errors.Is(e, s) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%v matches %d sentinels", e, n)
			}
		})
	}
}
