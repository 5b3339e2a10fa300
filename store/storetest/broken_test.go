package storetest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// The suite must be able to fail. TestSuiteCatchesBrokenStores runs the
// suite, in a child process of this test binary, against stores each
// broken in one way that real backends get wrong, and checks that the
// subtest meant to catch that fault fails.

const brokenEnv = "STORETEST_BROKEN_STORE"

type brokenStore struct {
	new func() store.Store
	run string // the -test.run pattern below TestSuiteCatchesBrokenStores
	// want is the name of a subtest that must fail.
	want string
}

// brokenCounts names the broken stores whose subtests run more than once
// (-test.count), and how often: want must fail in every run.
var brokenCounts = map[string]int{}

var brokenStores = map[string]brokenStore{
	// Conditions checked with a Get and then written unconditionally.
	"check-then-write": {func() store.Store { return checkThenWrite{memstore.New()} }, "Race",
		"Race/32_concurrent_PutIfAbsent:_exactly_one_wins"},
	"check-then-write-counter": {func() store.Store { return checkThenWrite{memstore.New()} }, "Race/8_workers",
		"Race/8_workers_x_25_CAS_increments_sum_to_exactly_200"},
	// Versions derived from the content, like a bare S3 ETag.
	"content-versions": {func() store.Store { return newContentStore() }, "Versions",
		"Versions/a_key_deleted_and_created_again_never_matches_an_older_version"},
	"content-versions-put": {func() store.Store { return newContentStore() }, "Put",
		"Put/versions_differ_after_every_write"},
	// Reads served from a cache that writes do not invalidate.
	"stale-reads-model": {func() store.Store { return newStaleReads() }, "Model",
		"Model/random_operation_sequences_match_a_reference_model"},
	"stale-reads-linearizability": {func() store.Store { return newStaleReads() }, "Linearizability",
		"Linearizability/concurrent_get,_put,_cas_and_delete_histories_are_linearizable"},
	// A listing that ignores After.
	"list-ignores-after": {func() store.Store { return listIgnoresAfter{memstore.New()} }, "List",
		"List/Limit_caps_the_page_and_Next_continues_it"},
	// A transaction applied op by op, stopping at the first failure.
	"partial-txn": {func() store.Store { return partialTxn{memstore.New()} }, "Txn",
		"Txn/a_failing_check_in_op_3_leaves_ops_1_and_2_unapplied"},
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	if name := os.Getenv(brokenEnv); name != "" {
		b := brokenStores[name]
		storetest.Run(t, storetest.Harness{New: func(tb testing.TB) store.Store {
			s := b.new()
			tb.Cleanup(func() { s.Close() })
			return s
		}})
		return
	}
	for name, b := range brokenStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			count := max(brokenCounts[name], 1)
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestSuiteCatchesBrokenStores$/^"+b.run, "-test.v", fmt.Sprintf("-test.count=%d", count), "-test.timeout=2m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store with %s:\n%s", name, tail(out))
			}
			if n := strings.Count(string(out), "--- FAIL: TestSuiteCatchesBrokenStores/"+b.want+" "); n != count {
				t.Errorf("subtest %s failed in %d of %d runs against %s:\n%s", b.want, n, count, name, tail(out))
			}
		})
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// checkThenWrite checks conditions with a Get, then writes
// unconditionally: faked atomicity.
type checkThenWrite struct{ *memstore.Store }

func (s checkThenWrite) holds(ctx context.Context, key string, c store.Condition) bool {
	e, err := s.Store.Get(ctx, key)
	runtime.Gosched()
	time.Sleep(50 * time.Microsecond)
	return c.Holds(err == nil, e.Version)
}

func (s checkThenWrite) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	if !s.holds(ctx, key, c) {
		return "", store.NewOpError("broken", "put", key, store.ErrConflict, nil)
	}
	return s.Store.Put(ctx, key, v, store.Unconditional)
}

func (s checkThenWrite) Delete(ctx context.Context, key string, c store.Condition) error {
	if c.IsAbsent() {
		return s.Store.Delete(ctx, key, c)
	}
	if !s.holds(ctx, key, c) {
		return store.NewOpError("broken", "delete", key, store.ErrConflict, nil)
	}
	return s.Store.Delete(ctx, key, store.Unconditional)
}

// contentStore versions each value by its hash, so a rewrite with the same
// bytes keeps the version, and a key re-created with old bytes matches
// versions from before the delete.
type contentStore struct {
	mu     sync.Mutex
	closed bool
	data   map[string][]byte
}

func newContentStore() *contentStore { return &contentStore{data: map[string][]byte{}} }

func hashVersion(v []byte) store.Version {
	h := sha256.Sum256(v)
	return store.Version(hex.EncodeToString(h[:8]))
}

func (s *contentStore) Capabilities() store.Capabilities {
	// It claims UniqueVersions, which content versions cannot keep.
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true, UniqueVersions: true}
}

func (s *contentStore) Get(ctx context.Context, key string) (store.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[key]
	if !ok {
		return store.Entry{}, store.ErrNotFound
	}
	return store.Entry{Key: key, Value: append([]byte(nil), v...), Version: hashVersion(v)}, nil
}

func (s *contentStore) Put(ctx context.Context, key string, value []byte, c store.Condition) (store.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.data[key]
	if !c.Holds(ok, hashVersion(cur)) {
		return "", store.ErrConflict
	}
	s.data[key] = append([]byte(nil), value...)
	return hashVersion(value), nil
}

func (s *contentStore) Delete(ctx context.Context, key string, c store.Condition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.data[key]
	if !c.Holds(ok, hashVersion(cur)) {
		return store.ErrConflict
	}
	delete(s.data, key)
	return nil
}

func (s *contentStore) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	return store.Page{}, store.ErrUnsupported
}

func (s *contentStore) Close() error { return nil }

// staleReads serves Get from a cache filled by earlier Gets and never
// invalidated by writes.
type staleReads struct {
	*memstore.Store
	mu    sync.Mutex
	cache map[string]store.Entry
}

func newStaleReads() *staleReads {
	return &staleReads{Store: memstore.New(), cache: map[string]store.Entry{}}
}

func (s *staleReads) Get(ctx context.Context, key string) (store.Entry, error) {
	s.mu.Lock()
	e, ok := s.cache[key]
	s.mu.Unlock()
	if ok {
		return e, nil
	}
	e, err := s.Store.Get(ctx, key)
	if err == nil {
		s.mu.Lock()
		s.cache[key] = e
		s.mu.Unlock()
	}
	return e, err
}

// listIgnoresAfter lists from the start whatever After says.
type listIgnoresAfter struct{ *memstore.Store }

func (s listIgnoresAfter) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	o := store.ListOptions{}
	if opts != nil {
		o.Limit = opts.Limit
	}
	return s.Store.List(ctx, prefix, &o)
}

// partialTxn applies a transaction op by op and stops at the first
// failing condition, leaving the earlier ops applied.
type partialTxn struct{ *memstore.Store }

func (s partialTxn) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	out := make([]store.Version, len(ops))
	for i, op := range ops {
		var err error
		switch op.Kind {
		case store.OpPut:
			out[i], err = s.Store.Put(ctx, op.Key, op.Value, op.Cond)
		case store.OpDelete:
			err = s.Store.Delete(ctx, op.Key, op.Cond)
		default:
			_, err = s.Store.Txn(ctx, []store.TxnOp{op})
		}
		if err != nil {
			return nil, &store.TxnError{Index: i, Key: op.Key, Err: store.ErrConflict}
		}
	}
	return out, nil
}

// afterByPosition resumes a listing just past the position of After, and
// from the start when After is no longer there: fine on a quiet store,
// wrong once the key it resumes from is deleted between pages.
type afterByPosition struct{ *memstore.Store }

func (s afterByPosition) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	all, err := s.Store.List(ctx, prefix, nil)
	if err != nil || opts == nil {
		return all, err
	}
	items := all.Items
	if opts.After != "" {
		start := 0
		for i, it := range items {
			if it.Key == opts.After {
				start = i + 1
			}
		}
		items = items[start:]
	}
	var page store.Page
	if opts.Limit > 0 && len(items) > opts.Limit {
		items = items[:opts.Limit]
		page.Next = items[len(items)-1].Key
	}
	page.Items = items
	return page, nil
}

func init() {
	brokenStores["list-after-by-position"] = brokenStore{
		func() store.Store { return afterByPosition{memstore.New()} }, "List/keys_not",
		"List/keys_not_written_while_paging_appear_exactly_once,_in_order",
	}
}

// ignoresDeletePreconditions deletes whatever version a delete names, like
// an emulator that drops If-Match on DELETE. The suite catches it through
// the probe's check, which it runs as its own subtest.
type ignoresDeletePreconditions struct{ *memstore.Store }

func (s ignoresDeletePreconditions) Delete(ctx context.Context, key string, c store.Condition) error {
	if _, ok := c.Match(); ok {
		c = store.Unconditional
	}
	return s.Store.Delete(ctx, key, c)
}

func init() {
	brokenStores["ignores-delete-preconditions"] = brokenStore{
		func() store.Store { return ignoresDeletePreconditions{memstore.New()} }, "DeleteIfMatch",
		"DeleteIfMatch/stale_version_returns_ErrConflict_and_keeps_the_key",
	}
}
