package engine

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/latchkey/latchkey/store"
)

const backend = "engine"

// DefaultPageSize is the page size of KVStore.List when ListOptions.Limit
// is 0.
const DefaultPageSize = 1000

// Codec is how a layer's records carry a store value: the layer keeps its
// own format in Record.Flags and Record.Data, and the store reads and
// writes values through it (server/internal/consulmodel's codec is
// Consul's KV entry).
type Codec interface {
	// Value returns the value r carries.
	Value(r Record) ([]byte, error)
	// Set returns the record an unconditional write of value makes of the
	// key's current record (exists false: there is none). The engine
	// stamps its indexes. An error (cur cannot be read) fails the write.
	Set(key string, cur Record, exists bool, value []byte) (Record, error)
}

// KVStore is the store contract over the engine's records, in the format
// of one Codec: the records a layer above serves (the Consul KV API), so
// a key written through one is read through the other. Version is the
// decimal ModifyIndex.
type KVStore struct {
	e         *Engine
	codec     Codec
	closed    atomic.Bool
	done      chan struct{} // closed by Close: wakes WaitChange
	closeOnce sync.Once
}

var _ interface {
	store.Store
	store.Transactor
	store.Watcher
} = (*KVStore)(nil)

// Store returns the store contract over e's records in codec's format.
// Closing the KVStore does not close e.
func (e *Engine) Store(codec Codec) *KVStore {
	return &KVStore{e: e, codec: codec, done: make(chan struct{})}
}

// Capabilities: everything but streaming.
func (s *KVStore) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true,
		Transactions: true, Watch: true, UniqueVersions: true}
}

func version(r Record) store.Version { return store.Version(strconv.FormatUint(r.ModifyIndex, 10)) }

// opErr maps engine errors onto the store's error set.
func (s *KVStore) opErr(op, key string, err error) error {
	var oe *store.OpError
	switch {
	case errors.As(err, &oe):
		return err
	case errors.Is(err, ErrClosed):
		return store.NewOpError(backend, op, key, store.ErrClosed, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		if op == "get" || op == "list" {
			return store.NewOpError(backend, op, key, err, nil)
		}
		return store.NewOpError(backend, op, key, store.ErrUnknownOutcome, err)
	default:
		return store.NewOpError(backend, op, key, store.ErrUnknownOutcome, err)
	}
}

// Get implements store.Store.
func (s *KVStore) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := store.Guard(ctx, s.closed.Load(), backend, "get", key); err != nil {
		return store.Entry{}, err
	}
	var r Record
	var ok bool
	var value []byte
	err := s.e.View(func(tx *Tx) error {
		var err error
		if r, ok, err = tx.GetRecord(key); err != nil || !ok {
			return err
		}
		value, err = s.codec.Value(r)
		return err
	})
	if err != nil {
		return store.Entry{}, s.opErr("get", key, err)
	}
	if !ok {
		return store.Entry{}, store.NewOpError(backend, "get", key, store.ErrNotFound, nil)
	}
	return store.Entry{Key: key, Value: value, Version: version(r)}, nil
}

// Put implements store.Store: the record written is the codec's Set of
// the current one.
func (s *KVStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := store.Guard(ctx, s.closed.Load(), backend, "put", key); err != nil {
		return "", err
	}
	var v store.Version
	_, err := s.e.Update(ctx, func(tx *Tx) error {
		var err error
		v, err = s.putOp(tx, key, value, cond)
		return err
	})
	if err != nil {
		return "", s.opErr("put", key, err)
	}
	return v, nil
}

func (s *KVStore) putOp(tx *Tx, key string, value []byte, cond store.Condition) (store.Version, error) {
	cur, ok, err := tx.GetRecord(key)
	if err != nil {
		return "", err
	}
	if !cond.Holds(ok, version(cur)) {
		return "", store.NewOpError(backend, "put", key, store.ErrConflict, nil)
	}
	next, err := s.codec.Set(key, cur, ok, value)
	if err != nil {
		return "", err
	}
	return version(tx.PutRecord(next)), nil
}

// Delete implements store.Store.
func (s *KVStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := store.Guard(ctx, s.closed.Load(), backend, "delete", key); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, nil)
	}
	_, err := s.e.Update(ctx, func(tx *Tx) error { return deleteOp(tx, key, cond) })
	if err != nil {
		return s.opErr("delete", key, err)
	}
	return nil
}

func deleteOp(tx *Tx, key string, cond store.Condition) error {
	cur, ok, err := tx.GetRecord(key)
	if err != nil {
		return err
	}
	if !cond.Holds(ok, version(cur)) {
		return store.NewOpError(backend, "delete", key, store.ErrConflict, nil)
	}
	tx.DeleteRecord(key)
	return nil
}

// List implements store.Store.
func (s *KVStore) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := store.GuardPrefix(ctx, s.closed.Load(), backend, "list", prefix); err != nil {
		return store.Page{}, err
	}
	var o store.ListOptions
	if opts != nil {
		o = *opts
	}
	if o.Limit <= 0 {
		o.Limit = DefaultPageSize
	}
	var page store.Page
	err := s.e.View(func(tx *Tx) error {
		kvs, err := tx.ListRecords(prefix, o.After, o.Limit+1)
		if err != nil {
			return err
		}
		if len(kvs) > o.Limit {
			kvs = kvs[:o.Limit]
			page.Next = kvs[len(kvs)-1].Key
		}
		page.Items = make([]store.Item, len(kvs))
		for i, kv := range kvs {
			page.Items[i] = store.Item{Key: kv.Key, Version: version(kv)}
		}
		return nil
	})
	if err != nil {
		return store.Page{}, s.opErr("list", prefix, err)
	}
	return page, nil
}

// Txn implements store.Transactor: all ops in one durable Update.
func (s *KVStore) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	if err := store.ValidateTxn(ops); err != nil {
		kind := store.ErrUnsupported
		if errors.Is(err, store.ErrInvalidKey) {
			kind = store.ErrInvalidKey
		}
		return nil, store.NewOpError(backend, "txn", "", kind, err)
	}
	if err := store.Guard(ctx, s.closed.Load(), backend, "txn", ops[0].Key); err != nil {
		return nil, err
	}
	var out []store.Version
	_, err := s.e.Update(ctx, func(tx *Tx) error {
		// Keys are distinct (ValidateTxn), so checking every condition
		// first is checking them against the state before the transaction.
		for i, op := range ops {
			cur, ok, err := tx.GetRecord(op.Key)
			if err != nil {
				return err
			}
			if !op.Cond.Holds(ok, version(cur)) {
				return store.NewOpError(backend, "txn", op.Key, store.ErrConflict,
					&store.TxnError{Index: i, Key: op.Key, Err: store.ErrConflict})
			}
		}
		out = make([]store.Version, len(ops))
		for i, op := range ops {
			switch op.Kind {
			case store.OpPut:
				var err error
				if out[i], err = s.putOp(tx, op.Key, op.Value, store.Unconditional); err != nil {
					return err
				}
			case store.OpDelete:
				tx.DeleteRecord(op.Key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.opErr("txn", ops[0].Key, err)
	}
	return out, nil
}

// WaitChange implements store.Watcher with Engine.Wait: no polling.
func (s *KVStore) WaitChange(ctx context.Context, key string, last store.Version) error {
	if err := store.ValidateKey(key); err != nil {
		return store.NewOpError(backend, "watch", key, store.ErrInvalidKey, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-wctx.Done():
		}
	}()
	for {
		if s.closed.Load() {
			return store.NewOpError(backend, "watch", key, store.ErrClosed, nil)
		}
		var cur store.Version
		var idx uint64
		err := s.e.View(func(tx *Tx) error {
			r, ok, err := tx.GetRecord(key)
			if ok {
				cur = version(r)
			}
			idx = tx.Index()
			return err
		})
		if err != nil {
			return s.opErr("watch", key, err)
		}
		if cur != last {
			return nil
		}
		if err := s.e.Wait(wctx, key, idx); err != nil {
			if errors.Is(err, ErrClosed) || s.closed.Load() {
				return store.NewOpError(backend, "watch", key, store.ErrClosed, err)
			}
			return err
		}
	}
}

// Close implements store.Store: later calls fail with ErrClosed. It does not
// close the engine.
func (s *KVStore) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() { close(s.done) })
	return nil
}
