package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// maxQuickRetries bounds immediate retries after lost races before Acquire
// waits a jittered poll interval.
const maxQuickRetries = 3

// Acquire waits until it holds the lease or ctx is done. Unless NoQueue is
// set, it waits in the lease's queue (see the package doc): waiters in
// every process are served in arrival order, only the head of the queue
// polls the record, and all of them together keep within PollBudget; it
// removes its ticket when it returns. The goroutines that call Acquire on
// one Locker take turns as the single waiter, so their requests to the
// store do not grow with their number. While the lease is held elsewhere
// the polling waiter re-reads the
// record every PollInterval with jitter, or blocks on store.Watcher when
// the backend has one (falling back to one poll interval when a watch
// returns early without a change), and it wakes at once when a lease of
// this Locker is released. When ctx ends first it returns an error
// matching ctx's error and, if the lease was held, ErrHeld (with the last
// *HeldError).
func (lk *Locker) Acquire(ctx context.Context) (*Lease, error) {
	select {
	case lk.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lease: acquire %q: %w", lk.key, ctx.Err())
	}
	defer func() { <-lk.sem }()
	defer lk.abandonPending()
	if !lk.opts.NoQueue {
		return lk.acquireQueued(ctx)
	}
	return lk.acquireFree(ctx)
}

// acquireFree is Acquire with NoQueue: poll (or watch) the record until
// it can be taken.
func (lk *Locker) acquireFree(ctx context.Context) (*Lease, error) {
	var last error
	quick, failures := 0, 0
	var watched store.Version // the version the last watch waited on, and when it began
	var watchedAt time.Time
	for {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return nil, fmt.Errorf("lease: acquire %q: %w; last attempt: %w", lk.key, err, last)
			}
			return nil, fmt.Errorf("lease: acquire %q: %w", lk.key, err)
		}
		wake := lk.wakeChan()
		l, err := lk.TryAcquire(ctx)
		if err == nil {
			return l, nil
		}
		var held *HeldError
		var wait time.Duration
		switch {
		case errors.As(err, &held):
			last, quick, failures = err, 0, 0
			lk.waiting(err)
			untilTakeover := time.Until(held.Until) + time.Millisecond
			wait = min(backoff.Jitter(lk.opts.PollInterval), untilTakeover)
			if w, ok := lk.s.(store.Watcher); ok && lk.s.Capabilities().Watch {
				v := lk.obsVersion()
				if v == watched && time.Since(watchedAt) < lk.opts.PollInterval/4 {
					break // the watch returned early without a change: poll this turn
				}
				watched, watchedAt = v, time.Now()
				lk.watch(ctx, w, untilTakeover, wake)
				continue
			}
		case errors.Is(err, ErrLostRace):
			quick++
			if quick <= maxQuickRetries {
				continue
			}
			quick = 0
			wait = backoff.Jitter(lk.opts.PollInterval)
		case retryable(err):
			if ctx.Err() != nil {
				continue // cut short by ctx: keep the last real outcome for the error
			}
			failures++
			last = err
			lk.waiting(err)
			wait = retryDelay(lk.opts.PollInterval, failures)
		default:
			return nil, err
		}
		_ = backoff.Wait(ctx, wait, wake)
	}
}

// watch blocks on the backend's native watch until the record changes,
// d passes, a lease of this Locker is released, or ctx ends.
func (lk *Locker) watch(ctx context.Context, w store.Watcher, d time.Duration, wake <-chan struct{}) {
	v := lk.obsVersion()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	go func() {
		select {
		case <-wake:
			cancel()
		case <-wctx.Done():
		}
	}()
	if err := w.WaitChange(wctx, lk.key, v); err != nil && wctx.Err() == nil {
		// The watch failed: fall back to one poll interval.
		_ = backoff.Wait(ctx, backoff.Jitter(lk.opts.PollInterval), wake)
	}
}

// abandonPending cleans up after Acquire gives up with an acquiring write
// whose outcome it never learned: if the write landed, release it, so
// that others need not wait a TTL.
func (lk *Locker) abandonPending() {
	lk.mu.Lock()
	p := lk.pending
	lk.mu.Unlock()
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lk.opts.TTL)
	defer cancel()
	e, err := lk.s.Get(ctx, lk.key)
	if err != nil {
		return
	}
	rec, err := decodeRecord(lk.key, e.Value)
	if err != nil || rec.Nonce != p.nonce {
		return
	}
	// Take it only if no other goroutine adopted it meanwhile.
	lk.mu.Lock()
	mine := lk.pending == p
	if mine {
		lk.pending = nil
	}
	lk.mu.Unlock()
	if mine {
		lk.newLease(p.rec, e.Version, p.start).Release(ctx)
	}
}

// retryable reports whether a store error may pass if we try again later.
func retryable(err error) bool {
	return errors.Is(err, store.ErrTransient) || errors.Is(err, store.ErrUnknownOutcome)
}

// retryDelay is the wait before retry n (n ≥ 1) after a store failure:
// full jitter under a ceiling that doubles from base/4 up to base, plus
// 1ms so that no retry comes at once.
func retryDelay(base time.Duration, n int) time.Duration {
	return backoff.Policy{Base: base / 4, Max: base}.Delay(n) + time.Millisecond
}

func (lk *Locker) obsVersion() store.Version {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.obs.version
}

func (lk *Locker) waiting(err error) {
	if f := lk.opts.Waiting; f != nil {
		f(err)
	}
}
