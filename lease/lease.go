package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// Lease is one holding of the lease at a key. It is valid until Done is
// closed; Err then says why (ErrLost or ErrReleased). A Lease is safe for
// concurrent use.
type Lease struct {
	lk        *Locker
	token     uint64
	holder    string
	recreated bool
	done      chan struct{}
	ctx       context.Context // cancelled with Done; see Context
	stop      context.CancelCauseFunc

	renewMu  sync.Mutex // one renew or release at a time
	keepOnce sync.Once  // KeepAlive

	mu         sync.Mutex
	rec        Record        // the record as we last wrote it
	version    store.Version // its version
	deadline   time.Time     // monotonic: start of last successful write + TTL − Margin
	timer      *time.Timer
	err        error                // set once Done is closed
	releasedOK bool                 // our release write is known to have landed
	pending    map[string]time.Time // nonces of renews whose outcome is unknown → their start
}

func newLease(lk *Locker, rec Record, v store.Version, start time.Time) *Lease {
	ctx, stop := context.WithCancelCause(context.Background())
	l := &Lease{lk: lk, token: rec.Token, holder: rec.Holder, recreated: rec.created && rec.Epoch > 1, done: make(chan struct{}), ctx: ctx, stop: stop,
		rec: rec, version: v, pending: map[string]time.Time{}}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = start.Add(lk.opts.TTL - lk.opts.Margin)
	l.timer = time.AfterFunc(time.Until(l.deadline), l.checkDeadline)
	return l
}

// Token returns the fencing token of this holding. Pass it to the
// protected resource (see FencedPut).
func (l *Lease) Token() uint64 { return l.token }

// Key returns the lease's key.
func (l *Lease) Key() string { return l.lk.key }

// Holder returns the holder name written in the record.
func (l *Lease) Holder() string { return l.holder }

// Done is closed when the lease is lost or released. It is closed at the
// latest at (start of the last successful write) + TTL − Margin on the
// holder's monotonic clock, before any contender could take over.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Context returns a context that is cancelled when Done is closed, with
// ErrLost or ErrReleased as its cause. Its lifetime is the lease's.
func (l *Lease) Context() context.Context { return l.ctx }

// Err returns nil while the lease is valid, then ErrLost or ErrReleased.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// ValidUntil returns the monotonic instant at which the holder will regard
// the lease as lost unless it is renewed first.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *Lease) expired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err != nil || !time.Now().Before(l.deadline)
}

// checkDeadline runs from the timer: past the deadline the lease is lost.
func (l *Lease) checkDeadline() {
	l.mu.Lock()
	d := time.Until(l.deadline)
	if d > 0 && l.err == nil {
		l.timer.Reset(d)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.end(ErrLost)
}

// end closes Done with cause, once.
func (l *Lease) end(cause error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = cause
	l.timer.Stop()
	l.mu.Unlock()
	close(l.done)
	l.stop(cause)
}

// Renew extends the lease: a CAS on our version with a new nonce. On
// success the lease is valid until (the instant just before the request was
// sent) + TTL − Margin. It returns an error matching ErrLost when the lease
// is gone (Done is then closed), and ErrReleased after Release. Any other
// error means the outcome is not known yet; Renew may be called again while
// the lease is valid, and a later read that finds this attempt's nonce
// counts it.
func (l *Lease) Renew(ctx context.Context) error {
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return fmt.Errorf("lease: renew %q: %w", l.Key(), err)
	}
	rec, version := l.rec, l.version
	rec.Nonce, rec.Renewed = newNonce(), l.lk.opts.Now()
	start := time.Now()
	l.pending[rec.Nonce] = start
	l.mu.Unlock()

	v, err := l.lk.s.Put(ctx, l.Key(), rec.encode(), store.IfMatch(version))
	if err == nil {
		return l.confirm("renew", rec, v, start)
	}
	if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrUnknownOutcome) && !errors.Is(err, store.ErrTransient) {
		return fmt.Errorf("lease: renew %q: %w", l.Key(), err)
	}
	return l.resolve(ctx, "renew", err)
}

// resolve reads the record back after a write whose outcome is unknown
// (or a conflict that may come from a retried write). Our last confirmed
// nonce means the write did not happen (yet); a pending nonce means it did;
// anything else means the lease was lost.
func (l *Lease) resolve(ctx context.Context, op string, cause error) error {
	e, err := l.lk.s.Get(ctx, l.Key())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("lease: %s %q: %w (reading back: %w)", op, l.Key(), cause, err)
	}
	var got Record
	if err == nil {
		got, err = decodeRecord(l.Key(), e.Value)
	}
	l.mu.Lock()
	if err == nil {
		if start, ok := l.pending[got.Nonce]; ok {
			rec := l.rec
			rec.Nonce = got.Nonce
			rec.Renewed = got.Renewed
			rec.Released = got.Released
			l.mu.Unlock()
			return l.confirm(op, rec, e.Version, start)
		}
		if got.Nonce == l.rec.Nonce && e.Version == l.version && !errors.Is(cause, store.ErrConflict) {
			l.mu.Unlock()
			return fmt.Errorf("lease: %s %q: %w", op, l.Key(), cause)
		}
	}
	l.mu.Unlock()
	l.end(ErrLost)
	return fmt.Errorf("lease: %s %q: %w", op, l.Key(), ErrLost)
}

// confirm records a successful renew of rec at version v sent at start.
// A lease that ended meanwhile stays ended (a late success does not revive
// it); confirm then returns an error matching ErrLost.
func (l *Lease) confirm(op string, rec Record, v store.Version, start time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec, l.version = rec, v
	clear(l.pending)
	if l.err != nil {
		return fmt.Errorf("lease: %s %q: %w", op, l.lk.key, ErrLost)
	}
	if d := start.Add(l.lk.opts.TTL - l.lk.opts.Margin); d.After(l.deadline) {
		l.deadline = d
	}
	return nil
}

// releaseAttempts bounds the release writes one Release sends: the first,
// and a retry after each ambiguous answer that its read-back could not
// settle (a renew of ours that landed late, or a release that did not).
const releaseAttempts = 3

// Release marks the record released, keeping its token, and closes Done.
// Done is closed before the write is sent, so work guarded by the lease
// stops first. It returns an error matching ErrLost when the record was
// no longer ours; releasing a lease that expired locally but whose record
// nobody changed succeeds, and so does releasing it again. Any other error
// means the outcome is unknown: call Release again, or let the record
// expire.
func (l *Lease) Release(ctx context.Context) error {
	l.end(ErrReleased)
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	defer l.lk.released()
	var tried []string // nonces of our release writes
	for attempt := 1; ; attempt++ {
		l.mu.Lock()
		if l.releasedOK {
			l.mu.Unlock()
			return nil
		}
		rec, version := l.rec, l.version
		rec.Nonce, rec.Renewed, rec.Released = newNonce(), l.lk.opts.Now(), true
		l.mu.Unlock()
		tried = append(tried, rec.Nonce)

		_, err := l.lk.s.Put(ctx, l.Key(), rec.encode(), store.IfMatch(version))
		if err == nil {
			l.mu.Lock()
			l.releasedOK = true
			l.mu.Unlock()
			return nil
		}
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrUnknownOutcome) && !errors.Is(err, store.ErrTransient) {
			return fmt.Errorf("lease: release %q: %w", l.Key(), err)
		}
		retry, err := l.resolveRelease(ctx, tried, err)
		if !retry || attempt == releaseAttempts {
			return err
		}
		_ = backoff.Sleep(ctx, retryDelay(l.lk.opts.PollInterval, attempt))
	}
}

// resolveRelease reads the record back after a release write that failed
// ambiguously. One of our release nonces: released. A renew of ours whose outcome
// was unknown (it landed after all): adopt its version and retry. Our
// last confirmed write, unchanged: the release did not happen; retry.
// Anyone else's write: lost.
func (l *Lease) resolveRelease(ctx context.Context, tried []string, cause error) (retry bool, err error) {
	e, err := l.lk.s.Get(ctx, l.Key())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("lease: release %q: %w (reading back: %w)", l.Key(), cause, err)
	}
	var got Record
	if err == nil {
		got, err = decodeRecord(l.Key(), e.Value)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
	case slices.Contains(tried, got.Nonce):
		l.releasedOK = true
		return false, nil
	case l.pending[got.Nonce] != time.Time{}:
		l.rec.Nonce, l.version = got.Nonce, e.Version
		clear(l.pending)
		return true, fmt.Errorf("lease: release %q: %w", l.Key(), cause)
	case got.Nonce == l.rec.Nonce && e.Version == l.version:
		return true, fmt.Errorf("lease: release %q: %w", l.Key(), cause)
	}
	return false, fmt.Errorf("lease: release %q: %w", l.Key(), ErrLost)
}

// Recreated reports whether this acquisition created the record after an
// earlier one at the key had been deleted by hand: its token continues
// above the deleted record's (see Record.Epoch), but whoever deleted it
// may have meant something by it.
func (l *Lease) Recreated() bool { return l.recreated }
