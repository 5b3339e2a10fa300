// Package faultstore wraps a store.Store and injects failures by rule, so
// that code built on the store contract (cas, lease, publish, the
// conformance suite) can be tested against the failures real backends
// produce: a transient refusal, and the ambiguous case where a write was
// applied but the caller is told its outcome is unknown.
//
// A Rule picks the operations it applies to (OpPut, OpGet, …, combined
// with |), optionally a key prefix, and a Fault:
//
//   - FailBefore: the call fails without reaching the inner store, with
//     Rule.Err (default store.ErrTransient). Nothing is applied.
//   - ApplyThenFail: the call reaches the inner store, which applies it;
//     the caller then gets Rule.Err (default store.ErrUnknownOutcome)
//     instead of the result, whatever the inner call returned. With
//     Rule.Err set to store.ErrConflict, on a resend that follows a
//     FailBefore ErrUnknownOutcome, it plays a first send that landed
//     late, just before the resend, which then lost its race to it.
//
// Firing is deterministic: Count limits a rule to its next Count matching
// calls, and Prob fires it on each matching call with that probability,
// drawn from a generator seeded by New. Rules are tried in the order they
// were injected; the first that fires wins.
//
// Injected errors are *store.OpError values whose Kind is Rule.Err and
// whose cause matches ErrInjected, so a test can tell an injected failure
// from a real one.
//
// A *Store always has the methods of store.Transactor and store.Watcher.
// It passes them through when the inner store implements them and
// declares the capability, and reports the inner store's Capabilities
// (without Streaming; values pass through Get and Put); otherwise Txn and
// WaitChange fail with store.ErrUnsupported. Check Capabilities, as the
// store contract asks, rather than asserting interfaces.
package faultstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/store"
)

const backend = "faultstore"

// ErrInjected is the cause of every injected failure.
var ErrInjected = errors.New("injected fault")

// Op is a set of operations, combined with |.
type Op uint8

// The operations a Rule can apply to.
const (
	OpGet Op = 1 << iota
	OpPut
	OpDelete
	OpList
	OpTxn
	OpWatch

	// Reads are the operations that change nothing.
	Reads = OpGet | OpList | OpWatch
	// Writes are the operations that may change the store.
	Writes = OpPut | OpDelete | OpTxn
	// AllOps is every operation.
	AllOps = Reads | Writes
)

// Fault is what an injected failure does.
type Fault uint8

const (
	// FailBefore fails the call without reaching the inner store.
	FailBefore Fault = iota
	// ApplyThenFail passes the call to the inner store, then reports a
	// failure instead of its result.
	ApplyThenFail
)

func (f Fault) String() string {
	if f == ApplyThenFail {
		return "apply-then-fail"
	}
	return "fail-before"
}

// Rule says which calls fail and how. The zero Rule fails every call
// before it reaches the inner store, with store.ErrTransient.
type Rule struct {
	// Ops are the operations the rule applies to; 0 means AllOps.
	Ops Op
	// Prefix limits the rule to keys starting with it ("" for every key).
	// For List it is matched against the listed prefix, for Txn against
	// every op's key.
	Prefix string
	// Fault is what happens.
	Fault Fault
	// Err is the error the caller gets. Zero means store.ErrTransient for
	// FailBefore and store.ErrUnknownOutcome for ApplyThenFail.
	Err error
	// Count limits the rule to firing Count times; 0 means no limit.
	Count int
	// Prob is the chance that the rule fires on a matching call; 0 means
	// always.
	Prob float64
}

type rule struct {
	Rule
	fired int
}

// Store is a store.Store that injects faults into calls to an inner store.
// It is safe for concurrent use.
type Store struct {
	inner store.Store

	mu       sync.Mutex
	rng      *rand.Rand
	rules    []*rule
	injected int
}

var _ interface {
	store.Store
	store.Transactor
	store.Watcher
} = (*Store)(nil)

// New wraps inner. seed drives the probabilistic rules; the same seed and
// the same sequence of calls give the same faults.
func New(inner store.Store, seed uint64) *Store {
	return &Store{inner: inner, rng: rand.New(rand.NewPCG(seed, 0x6c61746368))}
}

// Inject adds a rule after the existing ones.
func (s *Store) Inject(r Rule) {
	if r.Ops == 0 {
		r.Ops = AllOps
	}
	if r.Err == nil {
		r.Err = store.ErrTransient
		if r.Fault == ApplyThenFail {
			r.Err = store.ErrUnknownOutcome
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{Rule: r})
}

// FailNext makes the next n calls of ops fail with fault and its default
// error.
func (s *Store) FailNext(ops Op, n int, fault Fault) {
	s.Inject(Rule{Ops: ops, Fault: fault, Count: n})
}

// Reset removes every rule.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Injected returns how many faults have fired so far.
func (s *Store) Injected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.injected
}

// Inner returns the wrapped store.
func (s *Store) Inner() store.Store { return s.inner }

// fire returns the rule that fires for this call, if any.
func (s *Store) fire(op Op, keys ...string) (Rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if r.Ops&op == 0 || (r.Count > 0 && r.fired >= r.Count) || !matches(r.Prefix, keys) {
			continue
		}
		if r.Prob > 0 && s.rng.Float64() >= r.Prob {
			continue
		}
		r.fired++
		s.injected++
		return r.Rule, true
	}
	return Rule{}, false
}

func matches(prefix string, keys []string) bool {
	if prefix == "" {
		return true
	}
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func injected(op, key string, r Rule) error {
	return store.NewOpError(backend, op, key, r.Err, ErrInjected)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	r, ok := s.fire(OpGet, key)
	if ok && r.Fault == FailBefore {
		return store.Entry{}, injected("get", key, r)
	}
	e, err := s.inner.Get(ctx, key)
	if ok {
		return store.Entry{}, injected("get", key, r)
	}
	return e, err
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	r, ok := s.fire(OpPut, key)
	if ok && r.Fault == FailBefore {
		return "", injected("put", key, r)
	}
	v, err := s.inner.Put(ctx, key, value, cond)
	if ok {
		return "", injected("put", key, r)
	}
	return v, err
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	r, ok := s.fire(OpDelete, key)
	if ok && r.Fault == FailBefore {
		return injected("delete", key, r)
	}
	err := s.inner.Delete(ctx, key, cond)
	if ok {
		return injected("delete", key, r)
	}
	return err
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	r, ok := s.fire(OpList, prefix)
	if ok && r.Fault == FailBefore {
		return store.Page{}, injected("list", prefix, r)
	}
	p, err := s.inner.List(ctx, prefix, opts)
	if ok {
		return store.Page{}, injected("list", prefix, r)
	}
	return p, err
}

// Txn implements store.Transactor when the inner store does.
func (s *Store) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	tx, ok := s.inner.(store.Transactor)
	if !ok || !s.inner.Capabilities().Transactions {
		return nil, store.NewOpError(backend, "txn", firstKey(ops), store.ErrUnsupported, nil)
	}
	keys := make([]string, len(ops))
	for i, op := range ops {
		keys[i] = op.Key
	}
	r, fired := s.fire(OpTxn, keys...)
	if fired && r.Fault == FailBefore {
		return nil, injected("txn", firstKey(ops), r)
	}
	vs, err := tx.Txn(ctx, ops)
	if fired {
		return nil, injected("txn", firstKey(ops), r)
	}
	return vs, err
}

func firstKey(ops []store.TxnOp) string {
	if len(ops) == 0 {
		return ""
	}
	return ops[0].Key
}

// WaitChange implements store.Watcher when the inner store does.
func (s *Store) WaitChange(ctx context.Context, key string, last store.Version) error {
	w, ok := s.inner.(store.Watcher)
	if !ok || !s.inner.Capabilities().Watch {
		return store.NewOpError(backend, "watch", key, store.ErrUnsupported, nil)
	}
	r, fired := s.fire(OpWatch, key)
	if fired && r.Fault == FailBefore {
		return injected("watch", key, r)
	}
	err := w.WaitChange(ctx, key, last)
	if fired {
		return injected("watch", key, r)
	}
	return err
}

// Capabilities reports the inner store's, less Streaming, and less
// Transactions and Watch when the inner store lacks the interface.
func (s *Store) Capabilities() store.Capabilities {
	c := s.inner.Capabilities()
	c.Streaming = false
	if _, ok := s.inner.(store.Transactor); !ok {
		c.Transactions = false
	}
	if _, ok := s.inner.(store.Watcher); !ok {
		c.Watch = false
	}
	return c
}

// Close closes the inner store. It never fails by injection.
func (s *Store) Close() error { return s.inner.Close() }
