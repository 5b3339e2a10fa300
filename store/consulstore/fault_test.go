package consulstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/faultproxy"
)

// fault is what faultProxy does to one request: answer status (0: drop
// the connection without an answer), before forwarding it (not applied)
// or after (applied, answer lost).
type fault struct {
	status int
	after  bool
}

// faultProxy stands between consulstore and latchkey's real server and
// injects the queued faults into the next requests, one each; with none
// queued it forwards.
type faultProxy struct{ *faultproxy.HTTP }

func newFaultProxy(t *testing.T, target string) (*faultProxy, string) {
	t.Helper()
	p := faultproxy.NewHTTP(t, target)
	return &faultProxy{p}, p.Addr
}

func (p *faultProxy) inject(fs ...fault) {
	for _, f := range fs {
		a := faultproxy.Refuse
		if f.after {
			a = faultproxy.Drop
		}
		p.Add(faultproxy.Rule{Action: a, Status: f.status, Body: "injected fault", Times: 1})
	}
}

func (p *faultProxy) clear() { p.Clear() }

// Every failure on the wire maps onto the error set of store/errors.go,
// with the status kept: reads are transient; 429 is transient (refused
// before applying); a 5xx or a lost connection on a write is an unknown
// outcome unless a re-read proves the write applied.
func TestFaultsOnTheWire(t *testing.T) {
	ctx := context.Background()
	proxy, addr := newFaultProxy(t, startServer(t, ""))
	s := openTest(t, addr, "")
	if _, err := s.Put(ctx, "k", []byte("v0"), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	cur := func() store.Entry {
		t.Helper()
		e, err := s.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	type result struct {
		kind    error // nil: success
		status  int
		applied bool
	}
	cases := []struct {
		name   string
		faults []fault
		op     string // get, list, put, delete, cas-delete, txn, watch
		want   result
	}{
		// One address: a read is tried once here (readAttempts); the
		// caller's retry loop takes over.
		{"get, 500", rep(fault{status: 500}, 1), "get", result{store.ErrTransient, 500, false}},
		{"get, 503", rep(fault{status: 503}, 1), "get", result{store.ErrTransient, 503, false}},
		// 429 is back-pressure: retried with backoff, never seen.
		{"get, 429 (retried)", rep(fault{status: 429}, 2), "get", result{nil, 0, false}},
		// Go's transport resends a GET once when a reused connection dies
		// before answering, so it takes two drops to reach the caller.
		{"get, dropped", rep(fault{}, 2), "get", result{store.ErrTransient, 0, false}},
		{"list, 503", rep(fault{status: 503}, 1), "list", result{store.ErrTransient, 503, false}},
		{"watch, 503", rep(fault{status: 503}, 1), "watch", result{store.ErrTransient, 503, false}},
		{"get, 403", []fault{{status: 403}}, "get", result{store.ErrUnsupported, 403, false}},

		{"put, 429 before applying (retried)", []fault{{status: 429}}, "put", result{nil, 0, true}},
		{"put, 500 before applying", []fault{{status: 500}}, "put", result{store.ErrUnknownOutcome, 500, false}},
		{"put, 503 before applying", []fault{{status: 503}}, "put", result{store.ErrUnknownOutcome, 503, false}},
		{"put, 502 before applying", []fault{{status: 502}}, "put", result{store.ErrUnknownOutcome, 502, false}},
		{"put, dropped before applying", []fault{{}}, "put", result{store.ErrUnknownOutcome, 0, false}},
		{"put, 413", []fault{{status: 413}}, "put", result{store.ErrUnsupported, 413, false}},
		// Applied, answer lost: the re-read finds this write's nonce.
		{"put, 500 after applying (resolved)", []fault{{status: 500, after: true}}, "put", result{nil, 0, true}},
		{"put, dropped after applying (resolved)", []fault{{after: true}}, "put", result{nil, 0, true}},
		// Applied, answer lost, and the re-read fails too.
		{"put, dropped after applying, re-read fails", []fault{{after: true}, {status: 503}}, "put", result{store.ErrUnknownOutcome, 0, true}},

		{"cas delete, 500 before applying", []fault{{status: 500}}, "cas-delete", result{store.ErrUnknownOutcome, 500, false}},
		{"cas delete, dropped after applying", []fault{{after: true}}, "cas-delete", result{store.ErrUnknownOutcome, 0, true}},
		{"delete, 503 after applying", []fault{{status: 503, after: true}}, "delete", result{store.ErrUnknownOutcome, 503, true}},
		{"delete, 429 (retried)", []fault{{status: 429}}, "delete", result{nil, 0, true}},
		{"txn, 500 after applying (resolved)", []fault{{status: 500, after: true}}, "txn", result{nil, 0, true}},
		{"txn, 500 after applying, re-read fails", []fault{{status: 500, after: true}, {status: 500}}, "txn", result{store.ErrUnknownOutcome, 500, true}},
		{"txn, dropped before applying", []fault{{}}, "txn", result{store.ErrUnknownOutcome, 0, false}},
		{"txn without puts, 500 after applying", []fault{{status: 500, after: true}}, "txn-delete", result{store.ErrUnknownOutcome, 500, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := cur()
			proxy.inject(c.faults...)
			var err error
			switch c.op {
			case "get":
				_, err = s.Get(ctx, "k")
			case "list":
				_, err = s.List(ctx, "", nil)
			case "watch":
				err = s.WaitChange(ctx, "k", before.Version)
			case "put":
				var v store.Version
				v, err = s.Put(ctx, "k", []byte("new"), store.IfMatch(before.Version))
				if err == nil && v != cur().Version {
					t.Errorf("resolved put returned %s, key is at %s", v, cur().Version)
				}
			case "delete":
				err = s.Delete(ctx, "k", store.Unconditional)
			case "cas-delete":
				err = s.Delete(ctx, "k", store.IfMatch(before.Version))
			case "txn":
				var vs []store.Version
				vs, err = s.Txn(ctx, []store.TxnOp{
					{Kind: store.OpCheck, Key: "absent", Cond: store.IfAbsent},
					{Kind: store.OpPut, Key: "other", Value: []byte("o")},
					{Kind: store.OpPut, Key: "k", Value: []byte("new"), Cond: store.IfMatch(before.Version)},
				})
				if err == nil {
					if e, gerr := s.Get(ctx, "other"); gerr != nil || vs[0] != "" || vs[1] != e.Version || vs[2] != cur().Version {
						t.Errorf("resolved txn versions %q; other is at %+v (%v), k at %s", vs, e, gerr, cur().Version)
					}
				}
			case "txn-delete":
				_, err = s.Txn(ctx, []store.TxnOp{{Kind: store.OpDelete, Key: "k", Cond: store.IfMatch(before.Version)}})
			}
			proxy.clear() // a fault the op did not reach must not hit the checks
			var oe *store.OpError
			switch {
			case c.want.kind == nil && err != nil:
				t.Fatalf("err = %v, want success", err)
			case c.want.kind != nil && !errors.Is(err, c.want.kind):
				t.Fatalf("err = %v, want %v", err, c.want.kind)
			case c.want.kind != nil && (!errors.As(err, &oe) || oe.Status != c.want.status):
				t.Fatalf("err = %v (%#v), want status %d kept", err, oe, c.want.status)
			}
			after, gerr := s.Get(ctx, "k")
			applied := errors.Is(gerr, store.ErrNotFound) || (gerr == nil && after.Version != before.Version)
			if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
				t.Fatal(gerr)
			}
			if applied != c.want.applied {
				t.Fatalf("applied = %v, want %v (before %+v, after %+v)", applied, c.want.applied, before, after)
			}
			if errors.Is(gerr, store.ErrNotFound) { // put the key back for the next case
				if _, err := s.Put(ctx, "k", []byte("again"), store.IfAbsent); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestFaultProxyWrites runs every write through faultproxy.CheckWrites:
// its answer dropped after the server applied it, and delivered late,
// after its caller's context ended, with another writer in between.
// The late case is a caller whose context ends mid-request (shorter than
// Options.RequestTimeout).
func TestFaultProxyWrites(t *testing.T) {
	addr := startServer(t, "")
	proxy := faultproxy.NewHTTP(t, addr)
	prefix := testutil.RandomName("t-")
	open := func(addr string) *Store {
		s, err := Open(context.Background(), &Options{Address: addr, Prefix: prefix})
		testutil.Opened(t, s, err)
		return s
	}
	faultproxy.CheckWrites(t, faultproxy.Writes{Via: open(proxy.Addr), Direct: open(addr), Faults: proxy, OpTimeout: 300 * time.Millisecond})
}

func rep(f fault, n int) []fault {
	out := make([]fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}
