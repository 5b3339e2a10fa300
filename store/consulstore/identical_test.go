package consulstore

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// Against our server, which skips identical writes as Consul does, rewriting
// the same value still gives a new version every time (the Flags nonce),
// through Put and through Txn: the contract's "every successful Put
// returns a version different from every version the key had before".
func TestIdenticalWritesGetNewVersions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, startServer(t, ""), "")
	seen := map[store.Version]string{}
	note := func(v store.Version, what string) {
		t.Helper()
		if prev, dup := seen[v]; dup {
			t.Fatalf("%s returned version %s, already returned by %s", what, v, prev)
		}
		seen[v] = what
	}
	cur, err := s.Put(ctx, "k", []byte("same"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	note(cur, "create")
	for i := range 5 {
		if cur, err = s.Put(ctx, "k", []byte("same"), store.Unconditional); err != nil {
			t.Fatal(err)
		}
		note(cur, "unconditional put")
		if cur, err = s.Put(ctx, "k", []byte("same"), store.IfMatch(cur)); err != nil {
			t.Fatalf("put %d if-match: %v", i, err)
		}
		note(cur, "if-match put")
		vs, err := s.Txn(ctx, []store.TxnOp{{Kind: store.OpPut, Key: "k", Value: []byte("same"), Cond: store.IfMatch(cur)}})
		if err != nil {
			t.Fatalf("txn %d: %v", i, err)
		}
		cur = vs[0]
		note(cur, "txn put")
	}
	if e, err := s.Get(ctx, "k"); err != nil || e.Version != cur {
		t.Fatalf("Get = %+v, %v; want version %s", e, err, cur)
	}
}
