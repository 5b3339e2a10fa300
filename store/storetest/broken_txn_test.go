package storetest_test

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// txnPause widens the window a broken transaction leaves open.
func txnPause() {
	runtime.Gosched()
	time.Sleep(50 * time.Microsecond)
}

// checkTxn checks every op's condition with Get and returns the
// *TxnError of the first that fails.
func checkTxn(ctx context.Context, s *memstore.Store, ops []store.TxnOp) error {
	if err := store.ValidateTxn(ops); err != nil {
		return err
	}
	for i, op := range ops {
		e, err := s.Get(ctx, op.Key)
		if !op.Cond.Holds(err == nil, e.Version) {
			return &store.TxnError{Index: i, Key: op.Key, Err: store.ErrConflict}
		}
	}
	return nil
}

func unconditional(ops []store.TxnOp) []store.TxnOp {
	out := make([]store.TxnOp, len(ops))
	for i, op := range ops {
		op.Cond = store.Unconditional
		out[i] = op
	}
	return out
}

// txnNotIsolated serialises transactions among themselves, checks their
// conditions and then applies them all at once, but single-key writes do
// not take its lock: a Put can slip in between a Txn's check and its
// apply, and both succeed.
type txnNotIsolated struct {
	*memstore.Store
	mu sync.Mutex
}

func (s *txnNotIsolated) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkTxn(ctx, s.Store, ops); err != nil {
		return nil, err
	}
	txnPause()
	return s.Store.Txn(ctx, unconditional(ops))
}

// txnPartlyVisible is isolated (one lock for every write) and all or
// nothing (conditions checked first), but applies a transaction op by
// op, so a reader in between sees some of its writes and not others.
type txnPartlyVisible struct {
	*memstore.Store
	mu sync.Mutex
}

func (s *txnPartlyVisible) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Store.Put(ctx, key, v, c)
}

func (s *txnPartlyVisible) Delete(ctx context.Context, key string, c store.Condition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Store.Delete(ctx, key, c)
}

func (s *txnPartlyVisible) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkTxn(ctx, s.Store, ops); err != nil {
		return nil, err
	}
	out := make([]store.Version, len(ops))
	for i, op := range unconditional(ops) {
		if i > 0 {
			txnPause()
		}
		vs, err := s.Store.Txn(ctx, []store.TxnOp{op})
		if err != nil {
			return nil, err
		}
		out[i] = vs[0]
	}
	return out, nil
}

// txnOneByOne checks a transaction's conditions and then applies its
// writes one after another, unconditionally, and does not keep
// single-key writes out meanwhile. Between two of its writes it pauses
// until a single-key write has landed (or a few seconds have passed): the
// hook stands for any delay between the writes, and makes the fault
// certain to be exercised, so that the suite must catch it every time.
type txnOneByOne struct {
	*memstore.Store
	mu    sync.Mutex    // serialises transactions only
	wrote chan struct{} // a single-key write applied (capacity 1)
}

func newTxnOneByOne() *txnOneByOne {
	return &txnOneByOne{Store: memstore.New(), wrote: make(chan struct{}, 1)}
}

func (s *txnOneByOne) signal() {
	select {
	case s.wrote <- struct{}{}:
	default:
	}
}

func (s *txnOneByOne) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	ver, err := s.Store.Put(ctx, key, v, c)
	if err == nil {
		s.signal()
	}
	return ver, err
}

func (s *txnOneByOne) Delete(ctx context.Context, key string, c store.Condition) error {
	err := s.Store.Delete(ctx, key, c)
	if err == nil {
		s.signal()
	}
	return err
}

func (s *txnOneByOne) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkTxn(ctx, s.Store, ops); err != nil {
		return nil, err
	}
	select { // forget the writes before this one
	case <-s.wrote:
	default:
	}
	out := make([]store.Version, len(ops))
	for i, op := range unconditional(ops) {
		if i > 0 {
			select {
			case <-s.wrote:
			case <-time.After(5 * time.Second):
			}
		}
		vs, err := s.Store.Txn(ctx, []store.TxnOp{op})
		if err != nil {
			return nil, err
		}
		out[i] = vs[0]
	}
	return out, nil
}

func init() {
	brokenStores["txn-not-isolated-from-single-key-writes"] = brokenStore{
		func() store.Store { return &txnNotIsolated{Store: memstore.New()} }, "Txn/a_Txn_racing",
		"Txn/a_Txn_racing_PutIfMatch_and_DeleteIfMatch_on_one_version:_exactly_one_wins",
	}
	// Caught every time: the child runs the subtest 20 times, and each
	// run must fail.
	brokenStores["txn-applied-one-by-one"] = brokenStore{
		func() store.Store { return newTxnOneByOne() }, "Txn/once_a_Txn",
		"Txn/once_a_Txn's_write_is_visible,_single-key_writes_on_the_state_it_replaced_lose",
	}
	brokenCounts["txn-applied-one-by-one"] = 20
	brokenStores["txn-partly-visible"] = brokenStore{
		func() store.Store { return &txnPartlyVisible{Store: memstore.New()} }, "Txn/readers",
		"Txn/readers_never_see_a_Txn's_writes_partly_applied",
	}
}
