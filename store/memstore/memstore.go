// Package memstore is an in-memory store.Store, for tests and for programs
// that coordinate goroutines of one process. It implements the optional
// Transactor and Watcher interfaces.
//
// Versions come from one counter per Store and are never reused, so a
// version from before a Delete never matches the key created again.
package memstore

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/store"
)

const backend = "memstore"

// DefaultPageSize is the page size of List when ListOptions.Limit is 0.
const DefaultPageSize = 1000

type entry struct {
	value   []byte
	version store.Version
}

// Store is an in-memory store. The zero value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	closed  bool
	counter uint64
	data    map[string]entry
	changed chan struct{} // closed and replaced on every write
}

// New returns an empty store.
func New() *Store {
	return &Store{data: make(map[string]entry), changed: make(chan struct{})}
}

var _ interface {
	store.Store
	store.Transactor
	store.Watcher
} = (*Store)(nil)

// Capabilities: everything.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true,
		Transactions: true, Watch: true, Streaming: false, UniqueVersions: true}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := store.Guard(ctx, s.closed, backend, "get", key); err != nil {
		return store.Entry{}, err
	}
	e, ok := s.data[key]
	if !ok {
		return store.Entry{}, store.NewOpError(backend, "get", key, store.ErrNotFound, nil)
	}
	return store.Entry{Key: key, Value: bytes.Clone(e.value), Version: e.version}, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := store.Guard(ctx, s.closed, backend, "put", key); err != nil {
		return "", err
	}
	cur, ok := s.data[key]
	if !cond.Holds(ok, cur.version) {
		return "", store.NewOpError(backend, "put", key, store.ErrConflict, nil)
	}
	v := s.write(key, value)
	s.notify()
	return v, nil
}

// write stores value under key with a fresh version; s.mu is held.
func (s *Store) write(key string, value []byte) store.Version {
	s.counter++
	v := store.Version(strconv.FormatUint(s.counter, 10))
	s.data[key] = entry{value: bytes.Clone(value), version: v}
	return v
}

// notify wakes every waiter; s.mu is held.
func (s *Store) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := store.Guard(ctx, s.closed, backend, "delete", key); err != nil {
		return err
	}
	cur, ok := s.data[key]
	if !cond.Holds(ok, cur.version) {
		return store.NewOpError(backend, "delete", key, store.ErrConflict, nil)
	}
	if ok {
		delete(s.data, key)
		s.notify()
	}
	return nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	o := opts.Bounded(DefaultPageSize, math.MaxInt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := store.GuardPrefix(ctx, s.closed, backend, "list", prefix); err != nil {
		return store.Page{}, err
	}
	var items []store.Item
	for k, e := range s.data {
		if strings.HasPrefix(k, prefix) && k > o.After {
			items = append(items, store.Item{Key: k, Version: e.version})
		}
	}
	return store.PageOf(items, o.Limit), nil
}

// Txn implements store.Transactor.
func (s *Store) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	if err := store.ValidateTxn(ops); err != nil {
		return nil, store.NewOpError(backend, "txn", "", errKind(err), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := store.Guard(ctx, s.closed, backend, "txn", ops[0].Key); err != nil {
		return nil, err
	}
	for i, op := range ops {
		cur, ok := s.data[op.Key]
		if !op.Cond.Holds(ok, cur.version) {
			return nil, store.NewOpError(backend, "txn", op.Key, store.ErrConflict,
				&store.TxnError{Index: i, Key: op.Key, Err: store.ErrConflict})
		}
	}
	out := make([]store.Version, len(ops))
	for i, op := range ops {
		switch op.Kind {
		case store.OpPut:
			out[i] = s.write(op.Key, op.Value)
		case store.OpDelete:
			delete(s.data, op.Key)
		}
	}
	if slices.ContainsFunc(ops, func(op store.TxnOp) bool { return op.Kind != store.OpCheck }) {
		s.notify()
	}
	return out, nil
}

func errKind(err error) error {
	for _, k := range []error{store.ErrInvalidKey, store.ErrUnsupported} {
		if errors.Is(err, k) {
			return k
		}
	}
	return store.ErrUnsupported
}

// WaitChange implements store.Watcher.
func (s *Store) WaitChange(ctx context.Context, key string, last store.Version) error {
	if err := store.ValidateKey(key); err != nil {
		return store.NewOpError(backend, "watch", key, store.ErrInvalidKey, err)
	}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return store.NewOpError(backend, "watch", key, store.ErrClosed, nil)
		}
		cur := s.data[key].version
		ch := s.changed
		s.mu.Unlock()
		if cur != last {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Close implements store.Store. Waiters return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.notify()
	}
	return nil
}
