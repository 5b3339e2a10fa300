package consulapi

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/consul/api"
)

// Concurrent txns, half of which fail on their last op after earlier
// writes: every one answers, no failing txn leaves a trace, and every
// succeeding one is applied whole.
func TestTxnConcurrentFailuresApplyNothing(t *testing.T) {
	s := newTestServer(t, nil)
	txn := s.client.Txn()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := i%2 == 0
			ops := api.TxnOps{
				{KV: &api.KVTxnOp{Verb: api.KVSet, Key: fmt.Sprintf("c/%d/a", i), Value: []byte("a")}},
				{KV: &api.KVTxnOp{Verb: api.KVSet, Key: fmt.Sprintf("c/%d/b", i), Value: []byte("b")}},
				{KV: &api.KVTxnOp{Verb: api.KVGetTree, Key: fmt.Sprintf("c/%d/", i)}},
			}
			if fail {
				ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: fmt.Sprintf("c/%d/a", i)}})
			}
			ok, resp, _, err := txn.Txn(ops, nil)
			switch {
			case err != nil:
				errs <- err
			case ok == fail:
				errs <- fmt.Errorf("txn %d: ok=%v, errors %+v", i, ok, resp.Errors)
			case ok && len(resp.Results) != 4: // two sets + a tree of two
				errs <- fmt.Errorf("txn %d: results %d, want 4 (get-tree sees the txn's own writes)", i, len(resp.Results))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	keys, _, err := s.client.KV().Keys("c/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != n { // two keys per succeeding txn, n/2 of them
		t.Fatalf("%d keys after the txns, want %d: %v", len(keys), n, keys)
	}
	for _, k := range keys {
		var i int
		fmt.Sscanf(k, "c/%d/", &i)
		if i%2 == 0 {
			t.Errorf("key %s written by a failed txn", k)
		}
	}
}
