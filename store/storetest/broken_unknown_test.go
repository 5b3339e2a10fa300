package storetest_test

import (
	"bytes"
	"context"
	"sync"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// lateDuplicate applies every fifth successful Put, reports its outcome
// unknown, and applies it once more, unconditionally, after the next two
// writes of that key: a backend that resends a write of unknown outcome
// whose first send also lands, or whose stale send arrives late.
type lateDuplicate struct {
	*memstore.Store
	mu      sync.Mutex
	puts    int
	pending map[string]*lateWrite
}

type lateWrite struct {
	value []byte
	after int // writes of the key before it lands again
}

func newLateDuplicate() *lateDuplicate {
	return &lateDuplicate{Store: memstore.New(), pending: map[string]*lateWrite{}}
}

// land applies the pending duplicate of key once its turn has come.
func (s *lateDuplicate) land(ctx context.Context, key string) {
	w := s.pending[key]
	if w == nil {
		return
	}
	if w.after--; w.after <= 0 {
		delete(s.pending, key)
		_, _ = s.Store.Put(ctx, key, w.value, store.Unconditional)
	}
}

func (s *lateDuplicate) Put(ctx context.Context, key string, value []byte, c store.Condition) (store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.Store.Put(ctx, key, value, c)
	s.land(ctx, key)
	if err != nil {
		return v, err
	}
	if s.puts++; s.puts%5 == 0 && s.pending[key] == nil {
		s.pending[key] = &lateWrite{value: bytes.Clone(value), after: 2}
		return "", store.NewOpError("broken", "put", key, store.ErrUnknownOutcome, nil)
	}
	return v, nil
}

func (s *lateDuplicate) Delete(ctx context.Context, key string, c store.Condition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.Store.Delete(ctx, key, c)
	s.land(ctx, key)
	return err
}

func init() {
	brokenStores["unknown-outcome-lands-twice"] = brokenStore{
		func() store.Store { return newLateDuplicate() }, "Linearizability/concurrent",
		"Linearizability/concurrent_get,_put,_cas_and_delete_histories_are_linearizable",
	}
}
