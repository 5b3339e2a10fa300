package consulstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/store"
)

// Options say which Consul to talk to. A nil *Options means all defaults.
type Options struct {
	// Address is HOST:PORT of the Consul HTTP API. Default: the official
	// client's (CONSUL_HTTP_ADDR, else 127.0.0.1:8500).
	Address string
	// Scheme is "http" or "https". Default "http" (or the client's
	// CONSUL_HTTP_SSL rule).
	Scheme string
	// Prefix is prepended to every key ("jobs" stores key "a" at
	// "jobs/a"). Default: none, the whole KV space.
	Prefix string
	// Token is the ACL token. Default: CONSUL_HTTP_TOKEN (the official
	// client's rule).
	Token string
	// Datacenter, when set, is sent as ?dc=.
	Datacenter string
	// MaxValueSize is the largest value Put accepts, in bytes. Default
	// 380 KiB, so that the base64 value fits Consul's 512 KiB
	// txn_max_req_len; raise it only for a server configured larger.
	MaxValueSize int
	// WaitTime bounds one blocking query of WaitChange (it loops until a
	// change or ctx ends). Default 5 minutes.
	WaitTime time.Duration
}

// DefaultMaxValueSize is the default Options.MaxValueSize.
const DefaultMaxValueSize = 380 << 10

// listPageSize is the page size when ListOptions.Limit is 0.
const listPageSize = 1000

// Store is a store.Store over Consul KV. It implements store.Transactor
// and store.Watcher.
type Store struct {
	c      *api.Client
	kv     *api.KV
	prefix string
	opts   Options

	closeCtx context.Context // ended by Close: ends blocking queries
	closeFn  context.CancelFunc
	mu       sync.Mutex
	closed   bool
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Transactor = (*Store)(nil)
	_ store.Watcher    = (*Store)(nil)
)

// MaxIdleConns is how many idle connections to the agent a Store keeps
// for reuse: as many goroutines as that can share one Store without
// opening a connection per request.
const MaxIdleConns = 64

// Open returns a store over the Consul that opts names. It does not
// contact Consul; the first operation does.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	prefix := strings.TrimPrefix(o.Prefix, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("consulstore: %w", err)
	}
	if o.MaxValueSize <= 0 {
		o.MaxValueSize = DefaultMaxValueSize
	}
	if o.WaitTime <= 0 {
		o.WaitTime = 5 * time.Minute
	}
	cfg := api.DefaultConfig()
	if cfg.Transport != nil {
		// consul/api keeps GOMAXPROCS+1 idle connections per host: with
		// more goroutines than that sharing the Store, most requests
		// would open a connection and leave a TIME_WAIT socket behind.
		cfg.Transport.MaxIdleConnsPerHost = MaxIdleConns
	}
	if o.Address != "" {
		cfg.Address = o.Address
	}
	if o.Scheme != "" {
		cfg.Scheme = o.Scheme
	}
	if o.Token != "" {
		cfg.Token = o.Token
	}
	cfg.Datacenter = o.Datacenter
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("consulstore: %w", err)
	}
	s := &Store{c: c, kv: c.KV(), prefix: prefix, opts: o}
	s.closeCtx, s.closeFn = context.WithCancel(context.Background())
	return s, nil
}

// Capabilities: everything the contract names except streaming.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true, Transactions: true, Watch: true, UniqueVersions: true}
}

// Close ends blocking queries in flight and makes later calls fail with
// ErrClosed. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.closeFn()
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// check runs store.Guard (store.GuardPrefix for a prefix) before every
// operation.
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	if isPrefix {
		return store.GuardPrefix(ctx, s.isClosed(), backend, op, key)
	}
	return store.Guard(ctx, s.isClosed(), backend, op, key)
}

// writeNonce is the Flags of every write. Consul skips a write identical
// to the stored entry (same Value, Flags, Session, LockIndex) and leaves
// its ModifyIndex as it was; a fresh random Flags makes every Put differ
// from what it replaces, so every successful Put gets a new version, as
// the store contract requires. Flags carry nothing else for this store.
func writeNonce() uint64 { return rand.Uint64() | 1 }

func version(idx uint64) store.Version { return store.Version(strconv.FormatUint(idx, 10)) }

// index parses a Version; ok is false for a version no Consul key can
// have ("", "0", garbage), which no condition can match.
func index(v store.Version) (uint64, bool) {
	n, err := strconv.ParseUint(string(v), 10, 64)
	return n, err == nil && n > 0
}

func (s *Store) queryOpts(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx)
}

// Get implements store.Store with a consistent read.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	p, _, err := s.kv.Get(s.prefix+key, s.queryOpts(ctx))
	if err != nil {
		return store.Entry{}, s.opError(ctx, "get", key, false, err)
	}
	if p == nil {
		return store.Entry{}, store.NewOpError(backend, "get", key, store.ErrNotFound, nil)
	}
	return store.Entry{Key: key, Value: p.Value, Version: version(p.ModifyIndex)}, nil
}

// Put implements store.Store through /v1/txn, which returns the new
// ModifyIndex.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	if len(value) > s.opts.MaxValueSize {
		return "", store.NewOpError(backend, "put", key, store.ErrUnsupported,
			fmt.Errorf("value of %d bytes exceeds the limit of %d bytes (Options.MaxValueSize)", len(value), s.opts.MaxValueSize))
	}
	op := &api.KVTxnOp{Verb: api.KVSet, Key: s.prefix + key, Value: value, Flags: writeNonce()}
	if cond.IsAbsent() {
		op.Verb = api.KVCAS
	} else if v, ok := cond.Match(); ok {
		idx, valid := index(v)
		if !valid {
			return "", store.NewOpError(backend, "put", key, store.ErrConflict, nil)
		}
		op.Verb, op.Index = api.KVCAS, idx
	}
	res, err := s.txn(ctx, "put", key, api.TxnOps{{KV: op}})
	if errors.Is(err, store.ErrUnknownOutcome) {
		if v, ok := s.resolvePut(ctx, key, value, op.Flags); ok {
			return v, nil
		}
	}
	if err != nil {
		return "", err
	}
	if res.failed != nil {
		return "", store.NewOpError(backend, "put", key, store.ErrConflict, errors.New(res.failed.What))
	}
	if len(res.results) != 1 || res.results[0].KV == nil {
		return "", store.NewOpError(backend, "put", key, store.ErrUnknownOutcome, errors.New("txn answered without the written entry"))
	}
	return version(res.results[0].KV.ModifyIndex), nil
}

// resolvePut learns, after a Put whose outcome is unknown, whether it was
// applied: one consistent read finding the value with this write's Flags
// nonce proves it was, and gives its version. Anything else (another
// value, the read failing, ctx done) proves nothing, since the write may
// still be in flight or may have been overwritten, so the caller keeps
// ErrUnknownOutcome.
func (s *Store) resolvePut(ctx context.Context, key string, value []byte, nonce uint64) (store.Version, bool) {
	if ctx.Err() != nil || s.isClosed() {
		return "", false
	}
	p, _, err := s.kv.Get(s.prefix+key, s.queryOpts(ctx))
	if err != nil || p == nil || p.Flags != nonce || !bytes.Equal(p.Value, value) {
		return "", false
	}
	return version(p.ModifyIndex), true
}

// Delete implements store.Store. IfMatch is a txn of check-index and
// delete, so that a missing key is a conflict (DELETE ?cas says true).
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := s.check(ctx, "delete", key, false); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("delete if-absent"))
	}
	v, match := cond.Match()
	if !match {
		if _, err := s.kv.Delete(s.prefix+key, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
			return s.opError(ctx, "delete", key, true, err)
		}
		return nil
	}
	idx, valid := index(v)
	if !valid {
		return store.NewOpError(backend, "delete", key, store.ErrConflict, nil)
	}
	full := s.prefix + key
	res, err := s.txn(ctx, "delete", key, api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: full, Index: idx}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: full}},
	})
	if err != nil {
		return err
	}
	if res.failed != nil {
		return store.NewOpError(backend, "delete", key, store.ErrConflict, errors.New(res.failed.What))
	}
	return nil
}

// List implements store.Store. Consul cannot page, so each page reads the
// whole prefix (?recurse) and cuts the page out on the client.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	var lo store.ListOptions
	if opts != nil {
		lo = *opts
	}
	limit := lo.Limit
	if limit <= 0 {
		limit = listPageSize
	}
	pairs, _, err := s.kv.List(s.prefix+prefix, s.queryOpts(ctx))
	if err != nil {
		return store.Page{}, s.opError(ctx, "list", prefix, false, err)
	}
	slices.SortFunc(pairs, func(a, b *api.KVPair) int { return strings.Compare(a.Key, b.Key) })
	var page store.Page
	for _, p := range pairs {
		key := strings.TrimPrefix(p.Key, s.prefix)
		if key <= lo.After && lo.After != "" {
			continue
		}
		if len(page.Items) == limit {
			page.Next = page.Items[limit-1].Key
			break
		}
		page.Items = append(page.Items, store.Item{Key: key, Version: version(p.ModifyIndex)})
	}
	return page, nil
}
