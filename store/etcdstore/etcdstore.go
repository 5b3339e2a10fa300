package etcdstore

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
)

// Options say which etcd to talk to. A nil *Options is refused: at least
// one endpoint is required.
type Options struct {
	// Endpoints are the etcd client URLs or HOST:PORTs
	// ("127.0.0.1:2379", "https://etcd-1:2379"). Required.
	Endpoints []string
	// Prefix is prepended to every key ("jobs" stores key "a" at
	// "jobs/a"). Default: none, the whole keyspace.
	Prefix string
	// DialTimeout bounds authentication at Open (when Username is set).
	// Zero means DefaultDialTimeout; negative is refused.
	DialTimeout time.Duration
	// RequestTimeout bounds each request that has no earlier deadline of
	// its own: the official client waits for a connection rather than
	// failing fast, so without it a dead endpoint would block forever.
	// It does not bound WaitChange. Zero means DefaultRequestTimeout;
	// negative means none.
	RequestTimeout time.Duration
	// AttemptTimeout bounds each attempt of a request, so that one sent
	// to a member that stopped answering (paused, partitioned, a dead
	// host whose connection has not failed yet) gives up on it instead
	// of waiting, up to RequestTimeout, for it to come back. A read that
	// runs out of it is sent again (the client's balancer picks the next
	// member) until RequestTimeout or ctx ends; a write that runs out of
	// it is ErrUnknownOutcome at once (it may still be applied: re-read,
	// as cas.Update does). Keep it above the time the cluster takes to
	// answer a write under load, including an election, or writes come
	// back unknown needlessly. Default DefaultAttemptTimeout; negative
	// means none.
	AttemptTimeout time.Duration
	// Username and Password authenticate with etcd's auth (both or
	// neither). Default: no authentication.
	Username, Password string
	// TLS, when set, is used for every endpoint (an https:// endpoint
	// without it uses the system roots).
	TLS *tls.Config
	// MaxValueSize is the largest value Put accepts, and the largest sum
	// of keys and values one Txn accepts, in bytes. Zero means
	// DefaultMaxValueSize, which fits etcd's default --max-request-bytes
	// (1.5 MiB); raise it only for a server configured larger. Negative
	// is refused.
	MaxValueSize int
}

// DefaultMaxValueSize is the default Options.MaxValueSize: etcd's default
// request limit of 1.5 MiB less 8 KiB for the key, the prefix and framing.
const DefaultMaxValueSize = 3<<19 - 8<<10

// The defaults of DialTimeout and RequestTimeout.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 30 * time.Second
)

// DefaultAttemptTimeout is the default Options.AttemptTimeout: five
// times etcd's default election timeout (1 s), so that a request which
// meets an election, or a large write on a loaded machine, is not cut off
// by it. A cluster tuned for faster elections can take a shorter one.
const DefaultAttemptTimeout = 5 * time.Second

// keepAliveTime and keepAliveTimeout make the client ping a connection
// that has a request in flight and has been silent for keepAliveTime,
// and drop it when the ping goes unanswered for keepAliveTimeout, so the
// balancer stops sending requests to a member that stopped answering.
// gRPC raises any keepalive time below 10 s to 10 s, and etcd's server
// refuses pings more often than every 5 s (--grpc-keepalive-min-time).
// Pings are sent only while a request is in flight (etcd's server does
// not permit them otherwise).
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 3 * time.Second
)

// listPageSize is the page size when ListOptions.Limit is 0.
const listPageSize = 1000

// Store is a store.Store over etcd v3. It implements store.Transactor and
// store.Watcher.
type Store struct {
	c      *clientv3.Client
	prefix string
	opts   Options

	closeCtx context.Context // ended by Close: ends watches
	closeFn  context.CancelFunc
	closed   atomic.Bool
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Transactor = (*Store)(nil)
	_ store.Watcher    = (*Store)(nil)
)

// Open returns a store over the etcd cluster that opts names. It contacts
// etcd only to authenticate (when Username is set, within DialTimeout);
// otherwise the first operation connects.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	if opts == nil || len(opts.Endpoints) == 0 {
		return nil, errors.New("etcdstore: no endpoints (Options.Endpoints)")
	}
	o := *opts
	prefix := strings.TrimPrefix(o.Prefix, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("etcdstore: %w", err)
	}
	if (o.Username == "") != (o.Password == "") {
		return nil, errors.New("etcdstore: Username and Password go together")
	}
	// RequestTimeout and AttemptTimeout are the options whose negative
	// values mean something (no bound), documented on the fields.
	if err := optcheck.NonNegative(optcheck.Named("MaxValueSize", o.MaxValueSize), optcheck.Named("DialTimeout", o.DialTimeout)); err != nil {
		return nil, fmt.Errorf("etcdstore: open: %w", err)
	}
	o.MaxValueSize = cmp.Or(o.MaxValueSize, DefaultMaxValueSize)
	o.DialTimeout = cmp.Or(o.DialTimeout, DefaultDialTimeout)
	o.RequestTimeout = cmp.Or(o.RequestTimeout, DefaultRequestTimeout)
	o.AttemptTimeout = cmp.Or(o.AttemptTimeout, DefaultAttemptTimeout)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("etcdstore: open: %w", err)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   o.Endpoints,
		DialTimeout: o.DialTimeout,
		Username:    o.Username,
		Password:    o.Password,
		TLS:         o.TLS,
		// A paused or cut-off member's connection is dropped, so the
		// balancer sends requests to the others (see keepAliveTime).
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		// Room for the largest request we send, and more than the
		// client's default 2 MiB when MaxValueSize is raised.
		MaxCallSendMsgSize: max(2<<20, o.MaxValueSize+1<<20),
		Logger:             zap.NewNop(), // every failure is returned instead
	})
	if err != nil {
		return nil, store.NewOpError(backend, "open", strings.Join(o.Endpoints, ","), kindOf(false, err), cause(err))
	}
	s := &Store{c: c, prefix: prefix, opts: o}
	s.closeCtx, s.closeFn = context.WithCancel(context.Background())
	return s, nil
}

// Capabilities: everything the contract names except streaming.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true, Transactions: true, Watch: true, UniqueVersions: true}
}

// Close ends watches in flight, closes the client and makes later calls
// fail with ErrClosed. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.closeFn()
	if err := s.c.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcdstore: close: %w", err)
	}
	return nil
}

// check runs store.Guard (store.GuardPrefix for a prefix) before every
// operation.
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	return store.GuardKeyOrPrefix(ctx, s.closed.Load(), backend, op, key, isPrefix)
}

// reqCtx bounds one request, all its attempts, by Options.RequestTimeout.
func (s *Store) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.RequestTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, s.opts.RequestTimeout, errRequestTimeout)
}

// attemptCtx bounds one attempt of a request by Options.AttemptTimeout
// and asks the member for a leader: a member that knows none (cut off
// from the majority, or in an election) refuses the request at once
// with ErrNoLeader (ErrTransient, nothing applied) instead of holding it.
func (s *Store) attemptCtx(rctx context.Context) (context.Context, context.CancelFunc) {
	actx := clientv3.WithRequireLeader(rctx)
	if s.opts.AttemptTimeout < 0 {
		return context.WithCancel(actx)
	}
	return context.WithTimeoutCause(actx, s.opts.AttemptTimeout, errAttemptTimeout)
}

// call runs one request under reqCtx(ctx), each attempt under
// attemptCtx. A write is one attempt. A read whose attempt runs out of
// time is sent again, while the request's time lasts: the balancer sends
// it to the next member. It returns the last attempt's context, for
// opError.
func (s *Store) call(ctx context.Context, write bool, do func(actx context.Context) error) (context.Context, error) {
	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	for {
		actx, acancel := s.attemptCtx(rctx)
		err := do(actx)
		acancel()
		if err == nil || write || rctx.Err() != nil || !errors.Is(context.Cause(actx), errAttemptTimeout) {
			return actx, err
		}
	}
}

func version(rev int64) store.Version { return store.Version(strconv.FormatInt(rev, 10)) }

// revision parses a Version; ok is false for a version no etcd key can
// have ("", "0", negative, garbage), which no condition can match.
func revision(v store.Version) (int64, bool) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil && n > 0
}

// Get implements store.Store with a linearizable read.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	var resp *clientv3.GetResponse
	actx, err := s.call(ctx, false, func(actx context.Context) (err error) {
		resp, err = s.c.Get(actx, s.prefix+key)
		return err
	})
	if err != nil {
		return store.Entry{}, s.opError(ctx, actx, "get", key, false, err)
	}
	if len(resp.Kvs) == 0 {
		return store.Entry{}, store.NewOpError(backend, "get", key, store.ErrNotFound, nil)
	}
	kv := resp.Kvs[0]
	return store.Entry{Key: key, Value: kv.Value, Version: version(kv.ModRevision)}, nil
}

// Put implements store.Store. An unconditional Put is a plain put; a
// conditional one is a Txn comparing the key's CreateRevision with 0
// (IfAbsent) or its ModRevision with the version (IfMatch). The new
// version is the revision in the response header, which is the key's new
// ModRevision.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	if len(value) > s.opts.MaxValueSize {
		return "", store.NewOpError(backend, "put", key, store.ErrUnsupported, s.tooLarge(len(value)))
	}
	full := s.prefix + key
	if cond.IsUnconditional() {
		var resp *clientv3.PutResponse
		actx, err := s.call(ctx, true, func(actx context.Context) (err error) {
			resp, err = s.c.Put(actx, full, string(value))
			return err
		})
		if err != nil {
			return "", s.opError(ctx, actx, "put", key, true, err)
		}
		return version(resp.Header.Revision), nil
	}
	cmp, ok := compareFor(full, cond)
	if !ok {
		return "", store.NewOpError(backend, "put", key, store.ErrConflict, fmt.Errorf("%s: no etcd key has that version", cond))
	}
	rev, err := s.condTxn(ctx, "put", key, cmp, clientv3.OpPut(full, string(value)))
	if err != nil {
		return "", err
	}
	return version(rev), nil
}

// Delete implements store.Store. IfMatch is a Txn comparing the key's
// ModRevision, which is 0 for a missing key, so a missing key is a
// conflict.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := s.check(ctx, "delete", key, false); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("delete if-absent"))
	}
	full := s.prefix + key
	if cond.IsUnconditional() {
		actx, err := s.call(ctx, true, func(actx context.Context) error {
			_, err := s.c.Delete(actx, full)
			return err
		})
		if err != nil {
			return s.opError(ctx, actx, "delete", key, true, err)
		}
		return nil
	}
	cmp, ok := compareFor(full, cond)
	if !ok {
		return store.NewOpError(backend, "delete", key, store.ErrConflict, fmt.Errorf("%s: no etcd key has that version", cond))
	}
	_, err := s.condTxn(ctx, "delete", key, cmp, clientv3.OpDelete(full))
	return err
}

// compareFor returns the etcd compare that holds exactly when cond holds
// for key; ok is false for an IfMatch of a version no key can have.
func compareFor(full string, cond store.Condition) (clientv3.Cmp, bool) {
	if cond.IsAbsent() {
		return clientv3.Compare(clientv3.CreateRevision(full), "=", 0), true
	}
	v, _ := cond.Match()
	rev, ok := revision(v)
	return clientv3.Compare(clientv3.ModRevision(full), "=", rev), ok
}

// condTxn runs If(cmp).Then(op).Else(get key) and returns the revision of
// the write. When cmp fails it returns ErrConflict naming the key's
// current version, read in the same transaction.
func (s *Store) condTxn(ctx context.Context, op, key string, cmp clientv3.Cmp, then clientv3.Op) (int64, error) {
	full := s.prefix + key
	var resp *clientv3.TxnResponse
	actx, err := s.call(ctx, true, func(actx context.Context) (err error) {
		resp, err = s.c.Txn(actx).If(cmp).Then(then).Else(clientv3.OpGet(full, clientv3.WithKeysOnly())).Commit()
		return err
	})
	if err != nil {
		return 0, s.opError(ctx, actx, op, key, true, err)
	}
	if !resp.Succeeded {
		return 0, store.NewOpError(backend, op, key, store.ErrConflict, errors.New(currentState(resp, 0)))
	}
	return resp.Header.Revision, nil
}

// currentState describes the key read by the i-th Else op of a failed
// txn, for an error message.
func currentState(resp *clientv3.TxnResponse, i int) string {
	if i >= len(resp.Responses) {
		return "condition failed"
	}
	r := resp.Responses[i].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return "the key does not exist"
	}
	return "the key's version is " + string(version(r.Kvs[0].ModRevision))
}

func (s *Store) tooLarge(n int) error {
	return fmt.Errorf("%d bytes exceed the limit of %d bytes (Options.MaxValueSize; etcd's --max-request-bytes defaults to 1.5 MiB)",
		n, s.opts.MaxValueSize)
}
