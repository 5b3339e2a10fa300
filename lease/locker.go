package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// Locker contends for the lease at one key of one store. It remembers, from
// one attempt to the next, which version of the record it has seen and
// since when, so that a held record is taken over only after it has stayed
// unchanged for a full TTL on this Locker's monotonic clock.
//
// A Locker is safe for concurrent use. The goroutines of one process that
// contend for one key should share one Locker: its waiters share a single
// poller (see Acquire).
type Locker struct {
	s    store.Store
	key  string
	opts Options

	sem chan struct{} // one poller at a time (Acquire)

	mu      sync.Mutex
	obs     observation
	pending *pendingWrite // an acquiring write whose outcome is unknown
	wake    chan struct{} // closed and replaced when a lease of ours is released
}

// observation is the version of the record this Locker last saw and the
// monotonic time it first saw it.
type observation struct {
	version store.Version
	since   time.Time
}

// pendingWrite is an acquiring write that may have happened.
type pendingWrite struct {
	nonce string
	start time.Time // monotonic, taken before the write was sent
	rec   Record
}

// NewLocker returns a Locker for key in s. opts may be nil for defaults; it
// returns an error matching ErrOptions when they are invalid, and
// store.ErrUnsupported when s lacks create-if-absent or compare-and-swap.
func NewLocker(s store.Store, key string, opts *Options) (*Locker, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := store.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	if err := store.ValidateKey(EpochKey(key)); err != nil {
		return nil, fmt.Errorf("lease: key %q: its epoch counter %w", key, err)
	}
	if err := store.ValidateKey(QueueKey(key)); err != nil && !o.NoQueue {
		return nil, fmt.Errorf("lease: key %q: its queue %w", key, err)
	}
	if c := s.Capabilities(); !c.CreateIfAbsent || !c.CompareAndSwap {
		return nil, fmt.Errorf("lease: %q: %w: the store lacks create-if-absent or compare-and-swap", key, store.ErrUnsupported)
	}
	return &Locker{s: s, key: key, opts: o, sem: make(chan struct{}, 1), wake: make(chan struct{})}, nil
}

// Key returns the key the Locker contends for.
func (lk *Locker) Key() string { return lk.key }

// Options returns the Locker's options with defaults filled in.
func (lk *Locker) Options() Options { return lk.opts }

// TryAcquire makes one attempt. It returns the *Lease when acquired; an
// error matching ErrHeld (a *HeldError saying who holds it, and whether
// the record looks stale) when someone else holds it; an error matching ErrLostRace when another contender wrote
// the record between our read and our write (retry at once); or the store's
// error. The returned lease is not renewed in the background: call Renew,
// or use Hold or Run.
//
// TryAcquire does not look at the queue of waiters (see Acquire): it takes
// a free lease even while others queue for it.
func (lk *Locker) TryAcquire(ctx context.Context) (*Lease, error) {
	return lk.tryAcquire(ctx, nil)
}

// errOthersWait is tryAcquire's answer when the lease is free but mayTake
// said that others wait for it.
var errOthersWait = errors.New("free, but others wait for it")

// tryAcquire is TryAcquire; when mayTake is set, it is asked before a
// free (absent or released) record is written, and a false answer makes
// tryAcquire return errOthersWait without writing.
func (lk *Locker) tryAcquire(ctx context.Context, mayTake func(context.Context) (bool, error)) (*Lease, error) {
	e, err := lk.s.Get(ctx, lk.key)
	free := func() error {
		if mayTake == nil {
			return nil
		}
		ok, err := mayTake(ctx)
		if err == nil && !ok {
			err = errOthersWait
		}
		return err
	}
	if errors.Is(err, store.ErrNotFound) {
		lk.setObs("")
		if err := free(); err != nil {
			return nil, err
		}
		return lk.create(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("lease: acquire %q: %w", lk.key, err)
	}
	rec, err := decodeRecord(lk.key, e.Value)
	if err != nil {
		return nil, err
	}
	if l, adopted, err := lk.adoptPending(ctx, rec, e.Version); adopted {
		return l, err
	}
	if rec.Released {
		if err := free(); err != nil {
			return nil, err
		}
		return lk.takeOver(ctx, rec, e.Version)
	}
	since := lk.setObs(e.Version)
	if waited := time.Since(since); waited < rec.TTL {
		return nil, &HeldError{Key: lk.key, Holder: rec.Holder, Token: rec.Token, Forced: rec.Forced,
			Stale: lk.opts.Now().Sub(rec.Renewed) > StaleAfter(rec.TTL), Renewed: rec.Renewed,
			Until: time.Now().Add(rec.TTL - waited)}
	}
	return lk.takeOver(ctx, rec, e.Version)
}

// takeOver writes the record at version v, read as rec, as ours with the
// next token. A pending record (see Record.Pending) has no token: its
// taker starts a new epoch, as its creator would have. A record from
// before epochs existed first gets its counter.
func (lk *Locker) takeOver(ctx context.Context, rec Record, v store.Version) (*Lease, error) {
	if rec.Pending {
		n, err := bumpEpoch(ctx, lk.s, lk.key, false)
		if err != nil {
			return nil, err
		}
		return lk.write(ctx, Record{Token: epochToken(n), Epoch: n}, store.IfMatch(v))
	}
	epoch := rec.Epoch
	if epoch == 0 {
		n, err := bumpEpoch(ctx, lk.s, lk.key, true)
		if err != nil {
			return nil, err
		}
		epoch = n
	}
	return lk.write(ctx, Record{Token: rec.Token + 1, Epoch: epoch}, store.IfMatch(v))
}

// setObs records that the record is at version v (or absent, "") and
// returns when this Locker first saw that version.
func (lk *Locker) setObs(v store.Version) time.Time {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.obs.version != v || v == "" || lk.obs.since.IsZero() {
		lk.obs = observation{version: v, since: time.Now()}
	}
	return lk.obs.since
}

// create makes the absent record ours, with a token above every token
// handed out at the key before, whatever order our requests and anyone
// else's land in, and even if the record was deleted meanwhile.
//
// With multi-key transactions (store.Transactor), the epoch counter's
// increment and the record's create-if-absent are one transaction,
// conditioned on the counter's version as we read it: it applies only if
// no record was created at the key since that read, so a transaction
// that lands late fails.
//
// Without them (S3, GCS, Azure) the creation takes three steps: the
// record is created pending, holding no token; the counter is
// incremented to n; the pending record is swapped, by CAS on the version
// the create returned, for the first record of epoch n. A create that
// lands late only makes a pending record, which its creator (or, after a
// TTL unchanged, anyone) completes with a new epoch at that time; a swap
// that lands late fails, since any token handed out after our increment
// was written into the record at the key and changed its version.
func (lk *Locker) create(ctx context.Context) (*Lease, error) {
	if tx, ok := lk.s.(store.Transactor); ok && lk.s.Capabilities().Transactions {
		return lk.createTxn(ctx, tx)
	}
	return lk.write(ctx, Record{Pending: true, created: true}, store.IfAbsent)
}

// createTxn is create on a store with transactions.
func (lk *Locker) createTxn(ctx context.Context, tx store.Transactor) (*Lease, error) {
	n, ver, err := readEpoch(ctx, lk.s, lk.key)
	if err != nil {
		return nil, fmt.Errorf("lease: acquire %q: epoch counter: %w", lk.key, err)
	}
	cond := store.IfAbsent
	if ver != "" {
		cond = store.IfMatch(ver)
	}
	n++
	counter := encodeEpoch(n)
	return lk.send(ctx, Record{Token: epochToken(n), Epoch: n, created: true}, func(b []byte) (store.Version, error) {
		vs, err := tx.Txn(ctx, []store.TxnOp{
			store.PutOp(EpochKey(lk.key), counter, cond),
			store.PutOp(lk.key, b, store.IfAbsent),
		})
		if err != nil {
			return "", err
		}
		return vs[1], nil
	})
}

// write tries to make the record ours with rec's token under cond.
func (lk *Locker) write(ctx context.Context, rec Record, cond store.Condition) (*Lease, error) {
	return lk.send(ctx, rec, func(b []byte) (store.Version, error) { return lk.s.Put(ctx, lk.key, b, cond) })
}

// send fills in rec as ours and tries to make it the record with put,
// which writes the encoded record and returns its new version.
func (lk *Locker) send(ctx context.Context, rec Record, put func([]byte) (store.Version, error)) (*Lease, error) {
	now := lk.opts.Now()
	rec.Holder, rec.Nonce, rec.TTL = lk.opts.Holder, newNonce(), lk.opts.TTL
	rec.Acquired, rec.Renewed = now, now
	start := time.Now()
	v, err := put(rec.encode())
	if err == nil {
		return lk.acquired(ctx, rec, v, start)
	}
	if errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrUnknownOutcome) {
		// A backend that retried our write internally may report the
		// retry's conflict; read back once to tell.
		if l, ok, err := lk.readBack(ctx, rec, start); ok {
			return l, err
		}
		return nil, fmt.Errorf("lease: acquire %q: %w", lk.key, ErrLostRace)
	}
	if !errors.Is(err, store.ErrUnknownOutcome) && !errors.Is(err, store.ErrTransient) {
		return nil, fmt.Errorf("lease: acquire %q: %w", lk.key, err)
	}
	lk.setPending(rec, start)
	if l, ok, err := lk.readBack(ctx, rec, start); ok {
		return l, err
	}
	// Not ours, or we could not tell: the write may still land. The pending
	// nonce is remembered, and a later read that finds it adopts it.
	return nil, fmt.Errorf("lease: acquire %q: %w (after %w)", lk.key, ErrLostRace, err)
}

func (lk *Locker) setPending(rec Record, start time.Time) {
	lk.mu.Lock()
	lk.pending = &pendingWrite{nonce: rec.Nonce, start: start, rec: rec}
	lk.mu.Unlock()
}

// acquired follows our write of rec, at version v, sent at start: the
// lease, or, for a pending record, the rest of its creation (see create).
// Should the epoch counter fail, the pending record is remembered as an
// acquiring write, so that the next attempt completes it (or, once ctx
// has ended, Acquire releases it).
func (lk *Locker) acquired(ctx context.Context, rec Record, v store.Version, start time.Time) (*Lease, error) {
	if !rec.Pending {
		return lk.newLease(rec, v, start), nil
	}
	lk.setPending(rec, start)
	n, err := bumpEpoch(ctx, lk.s, lk.key, false)
	if err != nil {
		return nil, err
	}
	return lk.write(ctx, Record{Token: epochToken(n), Epoch: n, created: rec.created}, store.IfMatch(v))
}

// readBack reports whether the record now carries rec's nonce, and if so
// goes on as acquired.
func (lk *Locker) readBack(ctx context.Context, rec Record, start time.Time) (*Lease, bool, error) {
	e, err := lk.s.Get(ctx, lk.key)
	if err != nil {
		return nil, false, nil
	}
	got, err := decodeRecord(lk.key, e.Value)
	if err != nil || got.Nonce != rec.Nonce {
		return nil, false, nil
	}
	l, err := lk.acquired(ctx, rec, e.Version, start)
	return l, true, err
}

// adoptPending handles a read that finds the nonce of an earlier acquiring
// write whose outcome was unknown: the write happened after its start, so
// the lease is ours if it is still valid. An expired one is released so
// that the next attempt re-acquires it with a higher token.
func (lk *Locker) adoptPending(ctx context.Context, rec Record, v store.Version) (_ *Lease, adopted bool, err error) {
	// Take the pending write and clear it in one step: two goroutines
	// sharing this Locker that both read its nonce must not both adopt it.
	lk.mu.Lock()
	p := lk.pending
	if p != nil && rec.Nonce == p.nonce {
		lk.pending = nil
	} else {
		p = nil
	}
	lk.mu.Unlock()
	if adoptHook != nil {
		adoptHook()
	}
	if p == nil {
		return nil, false, nil
	}
	if p.rec.Pending && time.Now().Before(p.start.Add(lk.opts.TTL-lk.opts.Margin)) {
		l, err := lk.acquired(ctx, p.rec, v, p.start)
		return l, true, err
	}
	l := lk.newLease(p.rec, v, p.start)
	if !l.expired() {
		return l, true, nil
	}
	if err := l.Release(ctx); err != nil && !errors.Is(err, ErrLost) {
		return nil, true, fmt.Errorf("lease: acquire %q: %w", lk.key, err)
	}
	return nil, true, fmt.Errorf("lease: acquire %q: %w", lk.key, ErrLostRace)
}

// adoptHook, when set by a test, runs in adoptPending just after it
// looked at the pending write.
var adoptHook func()

// newLease records a successful acquisition and returns the lease.
func (lk *Locker) newLease(rec Record, v store.Version, start time.Time) *Lease {
	lk.mu.Lock()
	lk.obs = observation{}
	lk.pending = nil
	lk.mu.Unlock()
	return newLease(lk, rec, v, start)
}

// released wakes this Locker's poller after one of its leases was released.
func (lk *Locker) released() {
	lk.mu.Lock()
	close(lk.wake)
	lk.wake = make(chan struct{})
	lk.mu.Unlock()
}

func (lk *Locker) wakeChan() <-chan struct{} {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.wake
}

// ConfirmStale follows a TryAcquire that returned held with held.Stale
// set: the record looks abandoned, but only seeing it unchanged for a full
// TTL on this Locker's own clock allows a takeover. It re-reads the record
// every PollInterval until held.Until and takes it over then, spending at
// most about one TTL and a poll interval. It gives up at once, returning
// the new *HeldError, as soon as the record changes (its holder is alive
// after all, or someone else took it); it returns ctx's error if ctx ends
// first.
func (lk *Locker) ConfirmStale(ctx context.Context, held *HeldError) (*Lease, error) {
	deadline := held.Until.Add(lk.opts.PollInterval)
	var last error = held
	failures := 0
	for {
		l, err := lk.TryAcquire(ctx)
		var h *HeldError
		switch {
		case err == nil:
			return l, nil
		case errors.As(err, &h):
			if h.Until.After(held.Until.Add(time.Millisecond)) || h.Token != held.Token {
				return nil, err // the record changed: not stale
			}
			last = err
		case errors.Is(err, ErrLostRace):
			last = err
		case retryable(err):
			failures++
			last = err
		default:
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lease: acquire %q: %w; last attempt: %w", lk.key, ctx.Err(), last)
		}
		if !time.Now().Before(deadline) {
			return nil, last
		}
		wait := min(backoff.Jitter(lk.opts.PollInterval), time.Until(held.Until)+time.Millisecond)
		if failures > 0 && h == nil {
			wait = retryDelay(lk.opts.PollInterval, failures)
		}
		_ = backoff.Sleep(ctx, max(min(wait, time.Until(deadline)), time.Millisecond))
	}
}
