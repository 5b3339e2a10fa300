package storeprobe_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// ignoringStore declares every capability of memstore but silently turns
// conditional writes into unconditional ones, like a server that ignores
// If-None-Match / If-Match headers (puts) or delete preconditions.
type ignoringStore struct {
	*memstore.Store
	puts, deletes bool
}

func (s *ignoringStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if s.puts {
		cond = store.Unconditional
	}
	return s.Store.Put(ctx, key, value, cond)
}

func (s *ignoringStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	if _, ok := cond.Match(); ok && s.deletes {
		cond = store.Unconditional
	}
	return s.Store.Delete(ctx, key, cond)
}

// declaring wraps a store and declares caps instead of its own.
type declaring struct {
	store.Store
	caps store.Capabilities
}

func (s declaring) Capabilities() store.Capabilities { return s.caps }

// refusingStore declares no conditional capability and refuses every
// condition with ErrUnsupported, as a correct store without them does.
type refusingStore struct{ *memstore.Store }

func (s refusingStore) Capabilities() store.Capabilities { return store.Capabilities{} }

func (s refusingStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if !cond.IsUnconditional() {
		return "", store.NewOpError("refusing", "put", key, store.ErrUnsupported, nil)
	}
	return s.Store.Put(ctx, key, value, cond)
}

func (s refusingStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	if !cond.IsUnconditional() {
		return store.NewOpError("refusing", "delete", key, store.ErrUnsupported, nil)
	}
	return s.Store.Delete(ctx, key, cond)
}

// etagStore checks conditions honestly, but its version is a hash of the
// value, like an S3 ETag: rewriting identical bytes keeps the version.
type etagStore struct {
	mu   sync.Mutex
	data map[string][]byte
}

func newETagStore() *etagStore { return &etagStore{data: map[string][]byte{}} }

func etag(b []byte) store.Version {
	h := sha256.Sum256(b)
	return store.Version(hex.EncodeToString(h[:8]))
}

func (s *etagStore) Get(ctx context.Context, key string) (store.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.data[key]
	if !ok {
		return store.Entry{}, store.NewOpError("etag", "get", key, store.ErrNotFound, nil)
	}
	return store.Entry{Key: key, Value: b, Version: etag(b)}, nil
}

func (s *etagStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.data[key]
	if !cond.Holds(ok, etag(b)) {
		return "", store.NewOpError("etag", "put", key, store.ErrConflict, nil)
	}
	s.data[key] = append([]byte(nil), value...)
	return etag(value), nil
}

func (s *etagStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	if cond.IsAbsent() {
		return store.NewOpError("etag", "delete", key, store.ErrUnsupported, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.data[key]
	if !cond.Holds(ok, etag(b)) {
		return store.NewOpError("etag", "delete", key, store.ErrConflict, nil)
	}
	delete(s.data, key)
	return nil
}

func (s *etagStore) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := store.ListOptions{Limit: 1000}
	if opts != nil && opts.Limit > 0 {
		o.Limit = opts.Limit
	}
	if opts != nil {
		o.After = opts.After
	}
	var items []store.Item
	for k, b := range s.data {
		if strings.HasPrefix(k, prefix) && k > o.After {
			items = append(items, store.Item{Key: k, Version: etag(b)})
		}
	}
	return store.PageOf(items, o.Limit), nil
}

func (s *etagStore) Capabilities() store.Capabilities {
	// It claims UniqueVersions, which content versions cannot keep.
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true, UniqueVersions: true}
}

func (s *etagStore) Close() error { return nil }

// hangingStore blocks every Get of keys containing hang until ctx is done.
type hangingStore struct {
	*memstore.Store
	hang string
}

func (s hangingStore) Get(ctx context.Context, key string) (store.Entry, error) {
	if strings.Contains(key, s.hang) {
		<-ctx.Done()
		return store.Entry{}, store.NewOpError("hanging", "get", key, store.ErrUnknownOutcome, ctx.Err())
	}
	return s.Store.Get(ctx, key)
}
