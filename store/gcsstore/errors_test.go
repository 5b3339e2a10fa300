package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

func apiErr(code int, reason string) error {
	// Callers may wrap API errors; classify must see through that.
	return fmt.Errorf("gcsstore: wrapped: %w", &apiError{Code: code, Reason: reason, Message: "test"})
}

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	cases := []struct {
		name   string
		op     resolve.OpKind
		err    error
		kind   error
		status int
	}{
		{"412 conditionNotMet on a create", resolve.OpCondDelete, apiErr(412, "conditionNotMet"), store.ErrConflict, 412},
		{"412 without a reason", resolve.OpCondDelete, apiErr(412, ""), store.ErrConflict, 412},
		{"conditionNotMet reason alone", resolve.OpCondDelete, apiErr(0, "conditionNotMet"), store.ErrConflict, 0},
		{"404 on get", resolve.OpRead, apiErr(404, "notFound"), store.ErrNotFound, 404},
		{"404 on a conditional delete", resolve.OpCondDelete, apiErr(404, "notFound"), store.ErrConflict, 404},
		{"404 on a conditional upload (missing bucket)", resolve.OpCondPut, apiErr(404, "notFound"), store.ErrNotFound, 404},
		{"404 on an unconditional upload (missing bucket)", resolve.OpWrite, apiErr(404, "notFound"), store.ErrNotFound, 404},
		{"412 on a conditional upload", resolve.OpCondPut, apiErr(412, "conditionNotMet"), store.ErrConflict, 412},
		{"503 after a conditional upload", resolve.OpCondPut, apiErr(503, ""), store.ErrUnknownOutcome, 503},
		{"404 on a list (missing bucket)", resolve.OpRead, apiErr(404, "notFound"), store.ErrNotFound, 404},
		{"unusable 2xx answer on a read", resolve.OpRead, &badAnswer{"x"}, store.ErrTransient, 0},
		{"unusable 2xx answer after a write", resolve.OpCondPut, &badAnswer{"x"}, store.ErrUnknownOutcome, 0},
		{"429 on a read", resolve.OpRead, apiErr(429, "rateLimitExceeded"), store.ErrTransient, 429},
		{"429 after a write (may have been applied)", resolve.OpCondDelete, apiErr(429, "rateLimitExceeded"), store.ErrUnknownOutcome, 429},
		{"429 after an unconditional write", resolve.OpWrite, apiErr(429, "rateLimitExceeded"), store.ErrUnknownOutcome, 429},
		{"503 on a read", resolve.OpRead, apiErr(503, "backendError"), store.ErrTransient, 503},
		{"503 after a write", resolve.OpCondDelete, apiErr(503, "backendError"), store.ErrUnknownOutcome, 503},
		{"500 after a write", resolve.OpWrite, apiErr(500, "internalError"), store.ErrUnknownOutcome, 500},
		{"408 on a read", resolve.OpRead, apiErr(408, ""), store.ErrTransient, 408},
		{"408 after a write", resolve.OpCondDelete, apiErr(408, ""), store.ErrUnknownOutcome, 408},
		{"403 forbidden", resolve.OpRead, apiErr(403, "forbidden"), store.ErrUnsupported, 403},
		{"401 unauthorized on a write", resolve.OpCondDelete, apiErr(401, "required"), store.ErrUnsupported, 401},
		{"400 bad request", resolve.OpWrite, apiErr(400, "invalid"), store.ErrUnsupported, 400},
		{"304 on a read", resolve.OpRead, apiErr(304, ""), store.ErrTransient, 304},
		{"dial error on a write", resolve.OpCondDelete, fmt.Errorf("post: %w", dial), store.ErrTransient, 0},
		{"reset on a read", resolve.OpRead, reset, store.ErrTransient, 0},
		{"reset after a write", resolve.OpCondDelete, reset, store.ErrUnknownOutcome, 0},
		{"unexpected EOF after a write", resolve.OpWrite, io.ErrUnexpectedEOF, store.ErrUnknownOutcome, 0},
		{"context deadline after a write", resolve.OpCondDelete, context.DeadlineExceeded, store.ErrUnknownOutcome, 0},
		{"context cancelled on a read", resolve.OpRead, context.Canceled, store.ErrTransient, 0},
		{"cancelled dial after a write", resolve.OpCondDelete, &net.OpError{Op: "dial", Err: context.Canceled}, store.ErrUnknownOutcome, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := classify(c.op, c.err)
			if f.Kind != c.kind || f.Status != c.status {
				t.Fatalf("classify(%v) = %v (status %d), want %v (status %d)", c.err, f.Kind, f.Status, c.kind, c.status)
			}
			oe := opError("put", "k", f, c.err)
			if !errors.Is(oe, c.kind) || !errors.Is(oe, c.err) {
				t.Fatalf("opError %v does not match both %v and its cause", oe, c.kind)
			}
		})
	}
}

func TestClassifyKeepsReason(t *testing.T) {
	f := classify(resolve.OpCondDelete, apiErr(412, "conditionNotMet"))
	if f.Code != "conditionNotMet" {
		t.Fatalf("code = %q, want conditionNotMet", f.Code)
	}
	msg := opError("put", "jobs/a", f, apiErr(412, "conditionNotMet")).Error()
	want := `gcsstore: put "jobs/a": precondition failed (status 412 conditionNotMet)`
	if len(msg) < len(want) || msg[:len(want)] != want {
		t.Fatalf("message %q does not start with %q", msg, want)
	}
}

func TestVersionsAndConditions(t *testing.T) {
	for _, v := range []store.Version{"", "0", "-3", "abc", "1.5", "99999999999999999999"} {
		if g, ok := generation(v); ok {
			t.Errorf("generation(%q) = %d, true; want not a generation", v, g)
		}
		if _, conditional, ok := conditions(store.IfMatch(v)); !conditional || ok {
			t.Errorf("conditions(IfMatch(%q)): conditional %v ok %v, want a conflict", v, conditional, ok)
		}
	}
	if g, ok := generation(version(1700000000123456)); !ok || g != 1700000000123456 {
		t.Fatalf("round trip: %d %v", g, ok)
	}
	m, conditional, ok := conditions(store.IfAbsent)
	if !conditional || !ok || m != 0 {
		t.Fatalf("IfAbsent → ifGenerationMatch=%d conditional %v ok %v, want 0 true true", m, conditional, ok)
	}
	m, conditional, ok = conditions(store.IfMatch("42"))
	if !conditional || !ok || m != 42 {
		t.Fatalf("IfMatch(42) → ifGenerationMatch=%d conditional %v ok %v, want 42 true true", m, conditional, ok)
	}
	if _, conditional, _ := conditions(store.Unconditional); conditional {
		t.Fatal("Unconditional is conditional")
	}
}
