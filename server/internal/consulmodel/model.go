package consulmodel

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Options configure a Model. The HTTP layer fills them from its own.
type Options struct {
	// NodeName is this server's node: sessions default to it and the
	// catalog always holds it, with a passing serfHealth check.
	NodeName string
	// Datacenter is the one datacenter this server is.
	Datacenter string
	// BumpIdenticalWrites gives every successful set, cas and acquire a
	// fresh ModifyIndex, even when the result equals the stored entry
	// (see the package doc, "Identical writes").
	BumpIdenticalWrites bool
	// MaxSessions caps the live sessions; a create beyond it is refused
	// (TooMany) and writes nothing.
	MaxSessions int
	// Logger receives session expiries and their failures. Nil:
	// slog.Default().
	Logger *slog.Logger
}

// Model is Consul's state over one engine: KV entries, sessions with their
// TTL timers and lock-delays, and the catalog sessions depend on. Create
// it with New and Close it before closing its engine; it is safe for
// concurrent use.
type Model struct {
	e    *engine.Engine
	opts Options
	log  *slog.Logger
	now  func() time.Time // the lock-delays' clock
	sess *sessions
	// contended marks keys (by hash) whose last cas was refused; see
	// refusedNow.
	contended contention
}

// New returns the model over e. It restarts the TTL timer of every stored
// session at full length (TTL×2), as a Consul leader does when it takes
// over.
func New(e *engine.Engine, opts Options) (*Model, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Model{e: e, opts: opts, log: opts.Logger, now: time.Now}
	m.contended.seed = maphash.MakeSeed()
	m.sess = newSessions(m)
	if err := m.sess.start(); err != nil {
		return nil, err
	}
	return m, nil
}

// Close stops the session timers and waits for invalidations in flight.
// It does not close the engine.
func (m *Model) Close() { m.sess.close() }

// Write runs one KV write op (set, cas, lock, unlock, delete, delete-cas,
// delete-tree) in its own durable transaction and reports whether it
// applied: a condition that does not hold is (false, nil); input Consul
// refuses is an *Error.
//
// A cas or delete-cas on a contended key whose index is already stale is
// refused before it reaches the engine's writer (refusedNow): a hot key's
// losers cost no group-commit round, no write transaction and no wait for
// a batch-mate's fsync.
func (m *Model) Write(ctx context.Context, op Op) (bool, error) {
	conditional := op.Verb == VerbCAS || op.Verb == VerbDeleteCAS
	if conditional && m.refusedNow(op) {
		return false, nil
	}
	applied := false
	_, err := m.e.Update(ctx, func(tx *engine.Tx) error {
		applied = false
		_, err := m.apply(direct{tx}, op)
		switch {
		case err == nil:
			applied = true
		case IsFailure(err):
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if conditional {
		m.contended.mark(op.Key, !applied)
	}
	return applied, nil
}

// refusedNow reports whether op, a cas or delete-cas on a key whose last
// cas was refused, already fails on the latest durable state
// (engine.ModifyIndex), so that it is answered false from a read
// snapshot. The answer is linearizable: the snapshot holds every write
// acknowledged before this request arrived (the engine publishes a commit
// before it acknowledges it) and no write that is not durable, so it is
// the store's state at one moment inside the request's lifetime, and a
// cas refused on it is refused at that moment; a write committed after
// the snapshot is concurrent with this request and is ordered after it. A
// refusal changes nothing, so nothing else is owed: no index, no watcher
// woken. When the condition holds on the snapshot (or the engine cannot
// be read), the writer decides on the state it commits on, as for every
// write, since another write may land in between.
//
// Only contended keys are looked at first: on a key whose cas applies (a
// key of one's own) the snapshot would be one more read transaction per
// write, for nothing.
func (m *Model) refusedNow(op Op) bool {
	if !m.contended.marked(op.Key) {
		return false
	}
	modify, exists, err := m.e.ModifyIndex(op.Key)
	if err != nil || !Stale(op.Verb, op.Index, modify, exists) {
		return false
	}
	m.contended.mark(op.Key, true)
	return true
}

// contention remembers, per slot of a key hash, whether a cas or
// delete-cas there was refused lately: a refusal sets the slot's score to
// contendedScore, an applied one takes one off, and a slot above zero is
// contended. A hot key, with a refusal between any two wins, stays
// contended; a key refused once goes back to the plain path after a few
// wins. It only steers refusedNow: a wrong answer (two keys in one slot,
// racing updates of a score) costs one read transaction, or one trip
// through the writer, never a wrong reply.
type contention struct {
	seed  maphash.Seed
	slots [256]atomic.Int32
}

const contendedScore = 16

func (c *contention) slot(key string) *atomic.Int32 {
	return &c.slots[maphash.String(c.seed, key)%uint64(len(c.slots))]
}

func (c *contention) marked(key string) bool { return c.slot(key).Load() > 0 }

func (c *contention) mark(key string, refused bool) {
	s := c.slot(key)
	switch v := s.Load(); {
	case refused && v != contendedScore:
		s.Store(contendedScore)
	case !refused && v > 0:
		s.CompareAndSwap(v, v-1)
	}
}

// TxnError is one op of a /v1/txn that did not apply, with Consul's text.
type TxnError struct {
	OpIndex int
	What    string
}

// errTxnAborted rolls a txn's Update back when one of its ops failed.
var errTxnAborted = errors.New("consulmodel: txn aborted")

// Txn runs ops, some of which write, in one Update at one index, all or
// nothing: later ops see earlier ones, and when any op is refused nothing
// is written and every refused op is reported. A lock under lock-delay
// refuses the whole txn before it runs, as Consul's pre-check does.
// results are the entries the ops report, in order.
func (m *Model) Txn(ctx context.Context, ops []Op) (results []KV, errs []TxnError, err error) {
	for i, op := range ops {
		if op.Verb == VerbLock && m.sess.lockDelayed(op.Key) {
			errs = append(errs, TxnError{OpIndex: i, What: fmt.Sprintf("failed to lock key %q due to lock delay", op.Key)})
		}
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	_, err = m.e.Update(ctx, func(tx *engine.Tx) error {
		o := newOverlay(tx)
		var err error
		if results, errs, err = m.runTxn(o, ops); err != nil {
			return err
		}
		if len(errs) > 0 {
			return errTxnAborted // nothing was written
		}
		return o.commit()
	})
	if errors.Is(err, errTxnAborted) {
		return nil, errs, nil
	}
	return results, nil, err
}

// ReadTxn runs ops, none of which writes, in one snapshot; index is the
// snapshot's.
func (m *Model) ReadTxn(ops []Op) (results []KV, errs []TxnError, index uint64, err error) {
	err = m.e.View(func(tx *engine.Tx) error {
		var err error
		results, errs, err = m.runTxn(direct{tx}, ops)
		index = tx.Index()
		return err
	})
	return results, errs, index, err
}

// runTxn applies ops in order and collects every refused op; an error is
// the engine's, and ends the txn.
func (m *Model) runTxn(tx kvTx, ops []Op) ([]KV, []TxnError, error) {
	var results []KV
	var errs []TxnError
	for i, op := range ops {
		kvs, err := m.apply(tx, op)
		var me *Error
		switch {
		case errors.As(err, &me):
			errs = append(errs, TxnError{OpIndex: i, What: me.Msg})
		case err != nil:
			return nil, nil, err
		default:
			results = append(results, kvs...)
		}
	}
	if len(errs) > 0 {
		results = nil
	}
	return results, errs, nil
}

// Stats is a snapshot of the model's in-memory state, for metrics.
type Stats struct {
	// SessionTimers is the number of TTL sessions with an armed timer.
	SessionTimers int
	// LockDelays is the number of keys under a lock-delay (some may
	// have just ended).
	LockDelays int
}

// Stats returns a snapshot of the model's in-memory state.
func (m *Model) Stats() Stats {
	m.sess.mu.Lock()
	defer m.sess.mu.Unlock()
	return Stats{SessionTimers: len(m.sess.timers), LockDelays: len(m.sess.delays)}
}

// SessionExpiry reports when the TTL session id will be invalidated if it
// is not renewed before (ok is false for a session without a running TTL
// timer). The time lives in memory only, as Consul's leader keeps it.
func (m *Model) SessionExpiry(id string) (at time.Time, ok bool) {
	m.sess.mu.Lock()
	defer m.sess.mu.Unlock()
	if tt := m.sess.timers[id]; tt != nil {
		return tt.deadline, true
	}
	return time.Time{}, false
}

// FailExpiries makes every TTL invalidation first ask fail, and report its
// error instead of running when it returns one (the session is then
// untouched and the invalidation retried after ExpiryRetry). For tests
// only; call it before any session exists.
func (m *Model) FailExpiries(fail func(id string) error) {
	m.sess.mu.Lock()
	defer m.sess.mu.Unlock()
	m.sess.failExpiry = fail
}
