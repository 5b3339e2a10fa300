package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Hold acquires the lease like Acquire and then renews it in the background
// every RenewInterval, retrying failed renews until the lease's validity
// runs out. ctx bounds only the acquisition; the holding lasts until
// Release or loss (Done).
func (lk *Locker) Hold(ctx context.Context) (*Lease, error) {
	l, err := lk.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	l.KeepAlive()
	return l, nil
}

// KeepAlive starts renewing l in the background every RenewInterval until
// Done, as Hold does; use it on a lease from TryAcquire. Calling it again
// does nothing.
func (l *Lease) KeepAlive() {
	l.keepOnce.Do(func() { go l.keepAlive() })
}

// Run holds the lease while fn runs and releases it when fn returns. fn's
// context is cancelled when ctx is done or the lease is lost, the latter
// before any contender could take the lease over; fn must then stop
// touching the protected resource. Run returns fn's error, or an error
// matching ErrLost when the lease was lost while fn ran and fn returned
// nil, or the acquisition's or release's error.
func (lk *Locker) Run(ctx context.Context, fn func(ctx context.Context, l *Lease) error) error {
	l, err := lk.Hold(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	err = fn(fctx, l)
	stop()
	cancel(nil)
	lost := l.Err()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), lk.opts.TTL)
	defer rcancel()
	rerr := l.Release(rctx)
	switch {
	case err != nil:
		return err
	case errors.Is(lost, ErrLost):
		return fmt.Errorf("lease: run %q: %w", lk.key, ErrLost)
	case rerr != nil && !errors.Is(rerr, ErrLost):
		return rerr
	}
	return nil
}

// keepAlive renews l every RenewInterval until Done. A failed renew is
// retried with backoff while the lease is still valid; each attempt's
// request is bounded by the time left. After a loss it does not release
// the record: the holder's work may still be stopping (that is what the
// margin is for), and only the holder knows when it has; Run releases
// after fn returns, and users of Hold call Release.
func (l *Lease) keepAlive() {
	o := l.lk.opts
	// The first renew is due RenewInterval after the acquiring write was
	// sent, not after its answer came back.
	next := l.ValidUntil().Add(-(o.TTL - o.Margin)).Add(o.RenewInterval)
	failures := 0
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-l.done:
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		ctx, cancel := context.WithDeadline(l.ctx, l.ValidUntil())
		err := l.Renew(ctx)
		cancel()
		switch {
		case err == nil:
			failures = 0
			next = start.Add(o.RenewInterval)
		case errors.Is(err, ErrLost) || errors.Is(err, ErrReleased):
			// Done is closed; the next turn cleans up.
			next = time.Now()
		default:
			failures++
			next = time.Now().Add(retryDelay(o.RenewInterval/2, failures))
		}
	}
}
