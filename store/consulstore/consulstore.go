package consulstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
)

// Options say which Consul to talk to. A nil *Options means all defaults;
// a zero numeric field means its Default… constant, and a negative one is
// an error.
type Options struct {
	// Address is HOST:PORT of the Consul HTTP API. Default: the official
	// client's (CONSUL_HTTP_ADDR, else 127.0.0.1:8500).
	Address string
	// Addresses are more HOST:PORTs of the same Consul cluster (other
	// agents, or the servers themselves), tried in turn after Address
	// when the one in use does not answer in time, refuses connections or
	// answers 5xx. Every agent forwards KV requests to the same Raft
	// leader, so any of them gives the same answers and versions.
	Addresses []string
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
	// DefaultMaxValueSize (380 KiB), so that the base64 value fits
	// Consul's 512 KiB txn_max_req_len; raise it only for a server
	// configured larger.
	MaxValueSize int
	// WaitTime bounds one blocking query of WaitChange (it loops until a
	// change or ctx ends). Default DefaultWaitTime (5 minutes).
	WaitTime time.Duration
	// MaxConns is the most connections this process holds open to one
	// address, idle ones included, all Stores with the same address,
	// scheme and MaxConns together; requests beyond it wait for a
	// connection (or their ctx). A quarter of it (at least one) serves
	// blocking queries, which watchers of one key share. Default
	// DefaultMaxConns (64), under a third of Consul's default
	// limits.http_max_conns_per_client (200 per client IP).
	MaxConns int
	// RequestTimeout bounds each request to Consul (a blocking query gets
	// its wait on top); a write without an answer in time is
	// ErrUnknownOutcome (settled by a re-read where it can be), a read
	// goes on to the next address if there is one, else is ErrTransient
	// (for the caller's retry loop). Default
	// DefaultRequestTimeout (10s): longer than Consul's election and its
	// 7s rpc_hold_timeout, so a request held through an election is not
	// cut short.
	RequestTimeout time.Duration
	// HedgeDelay is how long a read (not a blocking query) waits for an
	// answer before it is also sent to the next address, which becomes the
	// one in use; the first answer wins. It is sent again every HedgeDelay,
	// up to twice per address and once more, each send with its own
	// RequestTimeout. Default DefaultHedgeDelay (1s); negative: never.
	HedgeDelay time.Duration
	// BackPressureWait is how long a request answered 429 (Consul's
	// per-client connection limit or rate limit, refused before anything
	// is applied) keeps being retried, with backoff, before the caller
	// sees ErrTransient. Default DefaultBackPressureWait (30s).
	BackPressureWait time.Duration
}

// DefaultMaxValueSize is the default Options.MaxValueSize.
const DefaultMaxValueSize = 380 << 10

// DefaultWaitTime is the default Options.WaitTime, the wait Consul
// itself gives a blocking query that names none (its default_query_time).
const DefaultWaitTime = 5 * time.Minute

// withDefaults returns a copy of o (nil: every default) with zero fields
// set to their defaults, or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(
		optcheck.Named("MaxValueSize", r.MaxValueSize), optcheck.Named("WaitTime", r.WaitTime),
		optcheck.Named("MaxConns", r.MaxConns), optcheck.Named("RequestTimeout", r.RequestTimeout),
		optcheck.Named("BackPressureWait", r.BackPressureWait),
	); err != nil {
		return r, err
	}
	r.MaxValueSize = cmp.Or(r.MaxValueSize, DefaultMaxValueSize)
	r.WaitTime = cmp.Or(r.WaitTime, DefaultWaitTime)
	r.MaxConns = cmp.Or(r.MaxConns, DefaultMaxConns)
	r.RequestTimeout = cmp.Or(r.RequestTimeout, DefaultRequestTimeout)
	r.BackPressureWait = cmp.Or(r.BackPressureWait, DefaultBackPressureWait)
	// HedgeDelay is the one option where negative has a meaning (never
	// hedge), documented on the field.
	r.HedgeDelay = cmp.Or(r.HedgeDelay, DefaultHedgeDelay)
	return r, nil
}

// listPageSize is the page size when ListOptions.Limit is 0.
const listPageSize = 1000

// Store is a store.Store over Consul KV. It implements store.Transactor
// and store.Watcher.
type Store struct {
	eps    endpoints
	prefix string
	opts   Options
	hubKey string // the cluster and credentials, keying shared watches

	closeCtx context.Context // ended by Close: ends blocking queries
	closeFn  context.CancelFunc
	closed   atomic.Bool
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Transactor = (*Store)(nil)
	_ store.Watcher    = (*Store)(nil)
)

// Open returns a store over the Consul that opts names. It does not
// contact Consul; the first operation does.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("consulstore: open: %w", err)
	}
	prefix := strings.TrimPrefix(o.Prefix, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("consulstore: %w", err)
	}
	s := &Store{prefix: prefix, opts: o}
	addrs := append([]string{o.Address}, o.Addresses...)
	for _, a := range addrs {
		ep, err := newEndpoint(a, o)
		if err != nil {
			s.releasePools()
			return nil, fmt.Errorf("consulstore: %w", err)
		}
		s.eps.list = append(s.eps.list, ep)
	}
	var hk strings.Builder
	for _, ep := range s.eps.list {
		fmt.Fprintf(&hk, "%s|", ep.pool.key)
	}
	fmt.Fprintf(&hk, "%q|%q", o.Token, o.Datacenter) // an empty Token is the environment's, the same for all
	s.hubKey = hk.String()
	s.closeCtx, s.closeFn = context.WithCancel(context.Background())
	return s, nil
}

// newEndpoint makes the client of one address ("" for the official
// client's default), sending through the process's shared pool for it.
func newEndpoint(addr string, o Options) (*endpoint, error) {
	cfg := api.DefaultConfig()
	if addr != "" {
		cfg.Address = addr
	}
	if o.Scheme != "" {
		cfg.Scheme = o.Scheme
	}
	if o.Token != "" {
		cfg.Token = o.Token
	}
	cfg.Datacenter = o.Datacenter
	// The address may carry its scheme (CONSUL_HTTP_ADDR=https://…), as
	// the official client allows.
	if sch, rest, ok := strings.Cut(cfg.Address, "://"); ok {
		switch sch {
		case "http", "https":
			if sch == "https" {
				cfg.Scheme = "https"
			}
			cfg.Address = rest
		default:
			return nil, fmt.Errorf("address %q: want HOST:PORT, http:// or https://", cfg.Address)
		}
	}
	p, err := acquirePool(cfg.Scheme, cfg.Address, o.MaxConns, cfg.TLSConfig)
	if err != nil {
		return nil, err
	}
	cfg.HttpClient = p.hc
	c, err := api.NewClient(cfg)
	if err != nil {
		releasePool(p)
		return nil, err
	}
	return &endpoint{addr: cfg.Address, pool: p, c: c}, nil
}

func (s *Store) releasePools() {
	for _, ep := range s.eps.list {
		releasePool(ep.pool)
	}
}

// Capabilities: everything the contract names except streaming.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true, Transactions: true, Watch: true, UniqueVersions: true}
}

// Close ends its watches and makes later calls fail with ErrClosed; the
// last Store of an address closes the idle connections to it. It is
// idempotent.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.closeFn()
		s.releasePools()
	}
	return nil
}

// check runs store.Guard (store.GuardPrefix for a prefix) before every
// operation.
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	return store.GuardKeyOrPrefix(ctx, s.closed.Load(), backend, op, key, isPrefix)
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

// get reads one key through do; q.WaitTime > 0 makes it a blocking
// query.
func (s *Store) get(ctx context.Context, full string, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
	type got struct {
		p    *api.KVPair
		meta *api.QueryMeta
	}
	g, err := read(s, ctx, q.WaitTime, func(ctx context.Context, c *api.Client) (got, error) {
		p, meta, err := c.KV().Get(full, q.WithContext(ctx))
		return got{p, meta}, err
	})
	return g.p, g.meta, err
}

// Get implements store.Store with a consistent read.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	p, _, err := s.get(ctx, s.prefix+key, &api.QueryOptions{RequireConsistent: true})
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
	if ctx.Err() != nil || s.closed.Load() {
		return "", false
	}
	p, _, err := s.get(ctx, s.prefix+key, &api.QueryOptions{RequireConsistent: true})
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
		err := s.do(ctx, true, 0, func(ctx context.Context, c *api.Client) error {
			_, err := c.KV().Delete(s.prefix+key, (&api.WriteOptions{}).WithContext(ctx))
			return err
		})
		if err != nil {
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
	lo := opts.Bounded(listPageSize, math.MaxInt)
	limit := lo.Limit
	pairs, err := read(s, ctx, 0, func(ctx context.Context, c *api.Client) (api.KVPairs, error) {
		pairs, _, err := c.KV().List(s.prefix+prefix, (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx))
		return pairs, err
	})
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
