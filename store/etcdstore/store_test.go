package etcdstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

// The version is the mod_revision the official client reads, and a key
// deleted and created again never gets a version it had before.
func TestVersionIsModRevision(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, nil)
	v1, err := s.Put(ctx, "k", []byte("a"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.c.Get(ctx, s.prefix+"k")
	if err != nil || len(resp.Kvs) != 1 || version(resp.Kvs[0].ModRevision) != v1 {
		t.Fatalf("version %q, etcd says %+v (%v)", v1, resp, err)
	}
	if err := s.Delete(ctx, "k", store.IfMatch(v1)); err != nil {
		t.Fatal(err)
	}
	v2, err := s.Put(ctx, "k", []byte("a"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := revision(v1)
	r2, _ := revision(v2)
	if r2 <= r1 {
		t.Fatalf("recreated key has version %s, not after %s", v2, v1)
	}
	if _, err := s.Put(ctx, "k", []byte("b"), store.IfMatch(v1)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("IfMatch of the version before the delete: %v", err)
	}
}

// A conflict says what the key is now, read in the same etcd Txn.
func TestConflictNamesCurrentVersion(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, nil)
	v, err := s.Put(ctx, "k", []byte("a"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(ctx, "k", []byte("b"), store.IfAbsent)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "version is "+string(v)) {
		t.Fatalf("IfAbsent on an existing key: %v", err)
	}
	err = s.Delete(ctx, "gone", store.IfMatch(v))
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("IfMatch delete of a missing key: %v", err)
	}
	if _, err := s.Put(ctx, "k", []byte("b"), store.IfMatch("0")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("IfMatch(\"0\"): %v", err)
	}
}

// The Txn's Else reads find the first failing op at the revision etcd
// evaluated, including an IfMatch of a version no key can have.
func TestTxnNamesFirstFailingOp(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, nil)
	va, _ := s.Put(ctx, "a", []byte("1"), store.Unconditional)
	vb, _ := s.Put(ctx, "b", []byte("1"), store.Unconditional)
	if _, err := s.Put(ctx, "b", []byte("2"), store.IfMatch(vb)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ops  []store.TxnOp
		want int
	}{
		{[]store.TxnOp{store.Check("a", store.IfMatch(va)), store.PutOp("b", []byte("x"), store.IfMatch(vb)), store.DeleteOp("c", store.IfMatch("junk"))}, 1},
		{[]store.TxnOp{store.Check("a", store.IfMatch(va)), store.DeleteOp("c", store.IfMatch("junk")), store.PutOp("b", []byte("x"), store.IfMatch(vb))}, 1},
		{[]store.TxnOp{store.PutOp("z", []byte("x"), store.Unconditional), store.Check("a", store.IfAbsent)}, 1},
		{[]store.TxnOp{store.Check("c", store.IfMatch(va)), store.Check("a", store.IfAbsent)}, 0},
	}
	for n, c := range cases {
		_, err := s.Txn(ctx, c.ops)
		var te *store.TxnError
		if !errors.As(err, &te) || !errors.Is(err, store.ErrConflict) || te.Index != c.want {
			t.Errorf("case %d: %v; want a conflict at op %d", n, err, c.want)
		}
	}
	if _, err := s.Get(ctx, "z"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed txn wrote: %v", err)
	}
	// All puts of one Txn share its revision.
	vs, err := s.Txn(ctx, []store.TxnOp{store.PutOp("x", nil, store.IfAbsent), store.PutOp("y", nil, store.Unconditional), store.DeleteOp("a", store.IfMatch(va))})
	if err != nil || vs[0] == "" || vs[0] != vs[1] || vs[2] != "" {
		t.Fatalf("Txn = %q, %v", vs, err)
	}
}

// Values past the limit are refused before sending; a request etcd finds
// too large is ErrUnsupported with ErrTooLarge, not a lost condition.
func TestValueLimits(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, nil)
	_, err := s.Put(ctx, "big", make([]byte, DefaultMaxValueSize+1), store.Unconditional)
	if !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "MaxValueSize") {
		t.Fatalf("oversize Put: %v", err)
	}
	half := make([]byte, DefaultMaxValueSize/2+1)
	_, err = s.Txn(ctx, []store.TxnOp{store.PutOp("a", half, store.Unconditional), store.PutOp("b", half, store.Unconditional)})
	if !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("oversize Txn: %v", err)
	}
	// A store that allows more than the server: etcd refuses (1.6 MiB is
	// over --max-request-bytes; 3 MiB is over its gRPC receive limit too).
	loose := openTest(t, &Options{MaxValueSize: 4 << 20})
	for _, n := range []int{1600 << 10, 3 << 20} {
		_, err := loose.Put(ctx, "big", make([]byte, n), store.IfAbsent)
		if !errors.Is(err, store.ErrUnsupported) || !errors.Is(err, ErrTooLarge) || errors.Is(err, store.ErrConflict) {
			t.Errorf("Put of %d bytes past the server's limit: %v", n, err)
		}
	}
	if _, err := s.Get(ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused Put wrote: %v", err)
	}
	if _, err := s.Put(ctx, "max", make([]byte, DefaultMaxValueSize), store.Unconditional); err != nil {
		t.Fatalf("Put of DefaultMaxValueSize bytes: %v", err)
	}
}

// With nothing listening, the client waits for a connection; the request
// timeout ends the wait: a read is transient, a write's outcome unknown.
func TestDeadEndpoint(t *testing.T) {
	s := openTest(t, &Options{Endpoints: []string{testutil.DeadAddr(t)}, RequestTimeout: 200 * time.Millisecond})
	ctx := t.Context()
	_, err := s.Get(ctx, "k")
	if !errors.Is(err, store.ErrTransient) || !strings.Contains(err.Error(), "RequestTimeout") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get from a dead endpoint: %v", err)
	}
	if _, err := s.Put(ctx, "k", nil, store.IfAbsent); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("Put to a dead endpoint: %v", err)
	}
	// The caller's own deadline is reported as such.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Delete(cctx, "k", store.Unconditional); !errors.Is(err, store.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Delete past the caller's deadline: %v", err)
	}
}

// A watch whose start revision was compacted away asks for a re-read
// instead of failing or hanging.
func TestWatchAfterCompaction(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, nil)
	v, _ := s.Put(ctx, "k", []byte("1"), store.Unconditional)
	old, _ := revision(v)
	last, _ := s.Put(ctx, "k", []byte("2"), store.Unconditional)
	s.Put(ctx, "other", []byte("x"), store.Unconditional)
	resp, err := s.c.Get(ctx, "compaction-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	again, err := s.watchFrom(ctx, ctx, "k", old+1)
	if err != nil || !again {
		t.Fatalf("watch from a compacted revision = %v, %v; want a re-read", again, err)
	}
	// WaitChange itself re-reads: it sees the current version and waits
	// for the next write.
	done := make(chan error, 1)
	go func() { done <- s.WaitChange(ctx, "k", last) }()
	select {
	case err := <-done:
		t.Fatalf("WaitChange returned %v before any change", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := s.Delete(ctx, "k", store.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitChange after a delete: %v", err)
	}
}

// Close ends a WaitChange in flight with ErrClosed.
func TestCloseEndsWaitChange(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, nil)
	done := make(chan error, 1)
	go func() { done <- s.WaitChange(ctx, "k", "") }()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrClosed) {
			t.Fatalf("WaitChange after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitChange still waiting 10s after Close")
	}
}

// Open refuses what it cannot use.
func TestOpenRefuses(t *testing.T) {
	ctx := t.Context()
	for _, o := range []*Options{nil, {}, {Endpoints: []string{endpoint}, Prefix: "a//b"}, {Endpoints: []string{endpoint}, Username: "u"}} {
		if s, err := Open(ctx, o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}
