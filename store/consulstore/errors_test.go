package consulstore

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

func TestKindOf(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	cases := []struct {
		name   string
		write  bool
		status int
		err    error
		want   error
	}{
		{"read, connection refused", false, 0, dial, store.ErrTransient},
		{"write, connection refused (never sent)", true, 0, dial, store.ErrTransient},
		{"read, connection reset", false, 0, reset, store.ErrTransient},
		{"write, connection reset", true, 0, reset, store.ErrUnknownOutcome},
		{"write, timeout", true, 0, timeout, store.ErrUnknownOutcome},
		{"write, unexpected EOF", true, 0, io.ErrUnexpectedEOF, store.ErrUnknownOutcome},
		{"read, 500", false, 500, api.StatusError{Code: 500}, store.ErrTransient},
		{"write, 500", true, 500, api.StatusError{Code: 500}, store.ErrUnknownOutcome},
		{"read, 503", false, 503, nil, store.ErrTransient},
		{"write, 503", true, 503, nil, store.ErrUnknownOutcome},
		{"write, 502", true, 502, nil, store.ErrUnknownOutcome},
		{"read, 429", false, 429, nil, store.ErrTransient},
		{"write, 429", true, 429, nil, store.ErrTransient},
		{"read, 403", false, 403, nil, store.ErrUnsupported},
		{"write, 403", true, 403, nil, store.ErrUnsupported},
		{"write, 413", true, 413, nil, store.ErrUnsupported},
		{"write, 400", true, 400, nil, store.ErrUnsupported},
		{"read, 405", false, 405, nil, store.ErrUnsupported},
	}
	for _, c := range cases {
		if got := kindOf(c.write, c.status, c.err); got != c.want {
			t.Errorf("%s: kindOf = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestErrorsOnTheWire(t *testing.T) {
	ctx := context.Background()
	addr := startServer(t, "tok")

	// 403 without the token: a clear error, kind ErrUnsupported.
	s := openTest(t, addr, "wrong")
	_, err := s.Get(ctx, "k")
	var oe *store.OpError
	if !errors.Is(err, ErrPermissionDenied) || !errors.Is(err, store.ErrUnsupported) || !errors.As(err, &oe) || oe.Status != 403 {
		t.Fatalf("Get with a wrong token: %v", err)
	}
	_, err = s.Put(ctx, "k", []byte("v"), store.Unconditional)
	if !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("Put with a wrong token: %v", err)
	}

	s = openTest(t, addr, "tok")
	v1, err := s.Put(ctx, "k", []byte("v"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	// The version is the ModifyIndex the official client reads.
	p, _, err := s.eps.list[0].c.KV().Get(s.prefix+"k", nil)
	if err != nil || p == nil || version(p.ModifyIndex) != v1 {
		t.Fatalf("version %q, Consul says %+v (%v)", v1, p, err)
	}
	if _, err := s.Put(ctx, "k", []byte("w"), store.IfAbsent); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	// Consul's DELETE ?cas says true for a missing key; the contract says
	// conflict.
	if err := s.Delete(ctx, "gone", store.IfMatch(v1)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("delete-if-match of a missing key: %v", err)
	}
	// Too large for a txn body: refused before sending.
	if _, err := s.Put(ctx, "big", make([]byte, DefaultMaxValueSize+1), store.Unconditional); !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("oversize put: %v", err)
	}
	// Nothing listening: transient for a read, never sent for a write.
	d := openTest(t, testutil.DeadAddr(t), "")
	if _, err := d.Get(ctx, "k"); !errors.Is(err, store.ErrTransient) {
		t.Fatalf("Get from a dead address: %v", err)
	}
	if _, err := d.Put(ctx, "k", nil, store.IfAbsent); !errors.Is(err, store.ErrTransient) {
		t.Fatalf("Put to a dead address: %v", err)
	}
}

// Consul answers an ACL denial inside a txn with 409 and an Errors entry;
// that is a permission problem, not a lost condition. (A canned answer:
// latchkey's server refuses such requests with 403 before the txn.)
func TestTxnACLDenialIsNotAConflict(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"Results":null,"Errors":[{"OpIndex":0,"What":"Permission denied: token with AccessorID 'x' lacks permission 'key:write' on \"p/k\""}]}`)
	}))
	defer srv.Close()
	s := openTest(t, srv.Listener.Addr().String(), "")
	_, err := s.Put(context.Background(), "k", []byte("v"), store.IfAbsent)
	if !errors.Is(err, ErrPermissionDenied) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put denied by ACL in a txn: %v", err)
	}
}
