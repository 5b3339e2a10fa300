package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// waiter is one queued Acquire: its ticket and what it last saw of the
// queue.
type waiter struct {
	lk *Locker
	t  Ticket

	sent     bool                  // a write of our ticket was sent (it may be in the queue)
	in       bool                  // our ticket is in q as last read or written
	q        Queue                 // the queue as last read or written
	ver      store.Version         // its version; "" when absent or not known
	seen     map[string]seenTicket // the tickets of the window, as first seen
	lookedAt time.Time             // when q was read or written
	place    int                   // our place when we last saw it move
	placeAt  time.Time             // when we first saw ourselves there
	perPlace time.Duration         // how long the line takes to move one place; 0: not seen yet
	looks    int                   // how many times we read or wrote q

	wasHead   bool
	headSince time.Time     // when we saw that we had become the head
	served    time.Duration // how long we were the head before we took the lease
	inWindow  bool          // we were in the window, behind the head, at our last look
	nextBeat  time.Time     // when the head writes its ticket again
	nextPoll  time.Time     // when the head reads the record again
	watched   store.Version
	watchedAt time.Time
	// the version of the queue the last watch of it waited on, and when
	qWatched   store.Version
	qWatchedAt time.Time
	movedAt    time.Time  // when the last watch of MovedKey began ("" once it waited d out)
	lastHeld   *HeldError // the last read of the record that found it held
	heldAt     time.Time

	last     error // the last outcome worth reporting, for the final error
	quick    int   // lost races in a row as the head
	failures int   // failed store requests in a row
}

// watcher returns the store's native watch, or nil.
func (w *waiter) watcher() store.Watcher {
	if wr, ok := w.lk.s.(store.Watcher); ok && w.lk.s.Capabilities().Watch {
		return wr
	}
	return nil
}

// acquireQueued is Acquire with the queue. A newcomer reads the record;
// if it is free and nobody waits, it takes it as TryAcquire would.
// Otherwise it puts its ticket at the end of the queue and waits for its
// turn: only the head of the queue polls the record (asHead); the tickets
// of the window at the front heartbeat; the others re-read the queue, each
// less often the further back it is (inLine); and a ticket of the window
// that another waiter sees unchanged for its ticketExpiry is removed.
// Acquisition itself is TryAcquire's, so the queue decides only who
// tries, never who holds.
func (lk *Locker) acquireQueued(ctx context.Context) (*Lease, error) {
	w := &waiter{lk: lk, t: Ticket{ID: newNonce(), Holder: lk.opts.Holder, Since: lk.opts.Now(), TTL: lk.opts.TTL}}
	defer w.leave()
	if l, err := w.arrive(ctx); l != nil || err != nil {
		return l, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, w.gaveUp(err)
		}
		wake := lk.wakeChan()
		var s step
		switch i := w.q.index(w.t.ID); {
		case !w.in || i < 0:
			s = w.takePlace(ctx)
		case i > 0:
			s = w.inLine(ctx, i)
		default:
			s = w.asHead(ctx, wake)
		}
		switch {
		case s.lease != nil || s.err != nil:
			return s.lease, s.err
		case s.wait >= 0:
			_ = backoff.Wait(ctx, s.wait, wake)
		}
	}
}

// step is what one turn of acquireQueued's loop decided: the lease, an
// error to give up with, or a wait before the next turn (negative: go on
// at once).
type step struct {
	lease *Lease
	err   error
	wait  time.Duration
}

// again is the step that goes on at once.
var again = step{wait: -1}

// arrive is the newcomer's try: the lease if it is free and nobody waits,
// an error to give up with, or neither (it queues).
func (w *waiter) arrive(ctx context.Context) (*Lease, error) {
	l, err := w.lk.tryAcquire(ctx, w.nobodyWaits)
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &w.lastHeld):
		w.last, w.heldAt = err, time.Now()
		w.lk.waiting(err)
	case errors.Is(err, errOthersWait), errors.Is(err, ErrLostRace), retryable(err):
	default:
		return nil, err
	}
	return nil, nil
}

// gaveUp is the error when ctx ended, with the last outcome seen.
func (w *waiter) gaveUp(err error) error {
	if w.last != nil {
		return fmt.Errorf("lease: acquire %q: %w; last attempt: %w", w.lk.key, err, w.last)
	}
	return fmt.Errorf("lease: acquire %q: %w", w.lk.key, err)
}

// failed takes a failed read or write of the queue: the error to give up
// with, or for one worth retrying the wait before the next try. A failure
// noted is reported to the caller's progress and kept for the final error.
func (w *waiter) failed(err error, note bool) step {
	if !queueRetryable(err) {
		return step{err: err}
	}
	w.failures++
	if note {
		w.last = err
		w.lk.waiting(err)
	}
	return step{wait: retryDelay(w.lk.opts.PollInterval, w.failures)}
}

// takePlace puts our ticket in the queue, or puts it back after it was
// removed (we were slow to heartbeat, or the queue was deleted): an old
// ticket keeps its Seq, hence its place.
func (w *waiter) takePlace(ctx context.Context) step {
	if err := w.put(ctx); err != nil {
		return w.failed(err, true)
	}
	w.failures = 0
	if ahead := w.q.index(w.t.ID); ahead > 0 {
		w.last = &QueuedError{Key: w.lk.key, Ahead: ahead, Held: w.lastHeld}
		w.lk.waiting(w.last)
	}
	return again
}

// inLine is a turn of the waiter at place i > 0: remove a ticket of the
// window taken for gone, heartbeat if we are in the window, or wait for
// the line to move and read it again.
func (w *waiter) inLine(ctx context.Context, i int) step {
	w.wasHead = false
	win := w.lk.opts.queueWindow()
	// The tickets of the window heartbeat; one of them seen unchanged for
	// its ticketExpiry is taken for gone, by whoever of the window or
	// behind it sees that first.
	if j := w.expired(i); j >= 0 {
		if err := w.expel(ctx, j); err != nil {
			return w.failed(err, false)
		}
		return again
	}
	if i < win {
		if !w.inWindow {
			// We just moved into the window: the others time our ticket
			// from now on.
			w.inWindow = true
			if !w.justWritten() {
				w.nextBeat = time.Now()
			}
		}
		if !time.Now().Before(w.nextBeat) {
			w.beat(ctx)
			return again
		}
	} else {
		w.inWindow = false
	}
	if err := w.waitQueue(ctx, max(w.lineWait(i, win), 0), i, win); err != nil {
		return again
	}
	if err := w.read(ctx); err != nil {
		return w.failed(err, true)
	}
	w.failures = 0
	return again
}

// lineWait is how long the waiter at place i > 0 waits before it reads
// the queue again.
func (w *waiter) lineWait(i, win int) time.Duration {
	wait := w.lk.opts.queueInterval(i, len(w.q.Tickets))
	if i == 1 || i > win {
		// The window and the one behind it read on the beat (so that each
		// of them sees each heartbeat of the others once, and no ticket's
		// expiry timer runs out while it still beats); the others spread
		// their reads.
		wait = backoff.Jitter(wait)
	}
	wait = w.movingRead(i, win, wait)
	if i <= win {
		// Those in or right behind the window look again as soon as
		// another ticket of it may be taken for gone; the others notice
		// at their pace.
		for j := range min(win, len(w.q.Tickets)) {
			if j != i {
				wait = min(wait, w.left(j)+time.Millisecond)
			}
		}
	}
	if i < win {
		wait = min(wait, time.Until(w.nextBeat))
	}
	return wait
}

// asHead is a turn of the head of the queue: heartbeat when due, poll the
// record when due (waiting for it to change in between), and take the
// lease when it is free.
func (w *waiter) asHead(ctx context.Context, wake <-chan struct{}) step {
	if !w.wasHead {
		// Our turn: heartbeat at once (the others have been timing our
		// ticket since it became the head), and poll, unless the
		// arrival's read of the record is fresh.
		w.wasHead, w.nextPoll, w.headSince = true, time.Now(), time.Now()
		if !w.justWritten() {
			w.nextBeat = time.Now()
		}
		if w.lastHeld != nil && time.Since(w.heldAt) < w.lk.opts.headInterval()/2 {
			w.waitForRecord(ctx, w.lastHeld, wake)
			return again
		}
	}
	if !time.Now().Before(w.nextBeat) {
		w.beat(ctx)
		if w.q.index(w.t.ID) != 0 {
			return again
		}
	}
	if time.Now().Before(w.nextPoll) {
		if w.watcher() != nil && w.lastHeld != nil {
			w.waitForRecord(ctx, w.lastHeld, wake)
		} else {
			w.waitAsHead(ctx, time.Until(w.nextPoll), wake)
		}
		return again
	}
	return w.poll(ctx, wake)
}

// poll is the head's try of the record.
func (w *waiter) poll(ctx context.Context, wake <-chan struct{}) step {
	l, err := w.lk.TryAcquire(ctx)
	if err == nil {
		w.served = time.Since(w.headSince)
		return step{lease: l}
	}
	var held *HeldError
	var wait time.Duration
	switch {
	case errors.As(err, &held):
		w.last, w.quick, w.failures, w.lastHeld, w.heldAt = err, 0, 0, held, time.Now()
		w.lk.waiting(err)
		w.waitForRecord(ctx, held, wake)
		return again
	case errors.Is(err, ErrLostRace):
		w.quick++
		if w.quick <= maxQuickRetries {
			return again
		}
		w.quick = 0
		wait = backoff.Jitter(w.lk.opts.headInterval())
	case retryable(err):
		if ctx.Err() != nil {
			return again
		}
		w.failures++
		w.last = err
		w.lk.waiting(err)
		wait = retryDelay(w.lk.opts.PollInterval, w.failures)
	default:
		return step{err: err}
	}
	w.nextPoll = time.Now().Add(wait)
	return again
}

// queueRetryable reports whether a failed queue operation is worth
// retrying later: a store failure that may pass, or a queue so contended
// that cas.Update gave up for now.
func queueRetryable(err error) bool {
	return retryable(err) || errors.Is(err, cas.ErrContended)
}

// nobodyWaits is the newcomer's check before it takes a free record:
// the queue is empty (or unreadable: the queue only orders, so a newcomer
// that cannot read it goes ahead).
func (w *waiter) nobodyWaits(ctx context.Context) (bool, error) {
	if err := w.read(ctx); err != nil {
		return true, nil
	}
	return len(w.q.Tickets) == 0, nil
}

// justWritten reports whether our last write of our ticket is the one in
// q (so its beat is fresh).
func (w *waiter) justWritten() bool {
	i := w.q.index(w.t.ID)
	return i >= 0 && w.q.Tickets[i].Beat == w.t.Beat && time.Now().Before(w.nextBeat)
}

// waitForRecord waits, as the head, after a read that found the record
// held: until the next poll (or, with a native watch, until the record
// changes), the takeover time, the next heartbeat, or a local release,
// whichever is first.
func (w *waiter) waitForRecord(ctx context.Context, held *HeldError, wake <-chan struct{}) {
	lk := w.lk
	untilTakeover := time.Until(held.Until) + time.Millisecond
	poll := min(backoff.Jitter(lk.opts.headInterval()), untilTakeover)
	wr := w.watcher()
	if wr == nil {
		w.nextPoll = time.Now().Add(poll)
		w.waitAsHead(ctx, poll, wake)
		return
	}
	v := lk.obsVersion()
	if v == w.watched && time.Since(w.watchedAt) < lk.opts.PollInterval/4 {
		// The watch returned early without a change: poll this turn.
		w.nextPoll = time.Now().Add(poll)
		w.waitAsHead(ctx, poll, wake)
		return
	}
	w.watched, w.watchedAt = v, time.Now()
	takeover := time.Now().Add(untilTakeover)
	deadline := takeover
	if w.nextBeat.Before(deadline) {
		deadline = w.nextBeat
	}
	lk.watch(ctx, wr, time.Until(deadline), wake)
	w.nextPoll = time.Now()
	if !time.Now().Before(deadline) && deadline.Before(takeover) {
		// Only the heartbeat is due: keep watching after it.
		w.nextPoll = takeover
		w.watched = ""
	}
}

// waitQueue waits d before the next read of the queue. The waiters of the
// window and the first one behind it, on a store with a native watch
// (watchQueue), wake as soon as the queue changes instead: above all when
// the head leaves it, having taken the lease, so that the next in line
// becomes the head at once rather than at its next read, however short
// the holds. Each queue write then costs each of them a read.
//
// Behind them, a waiter that the line has not moved for a TTL (the lease
// is held for long, and it reads on the budget, seconds apart) blocks on
// MovedKey instead, which the waiter served writes as it leaves the queue
// (where the store has a native watch): when the line starts moving
// again, it reads at once and follows the line's pace from then on.
func (w *waiter) waitQueue(ctx context.Context, d time.Duration, i, win int) error {
	wr := w.watcher()
	if wr != nil && i > win && time.Since(w.placeAt) >= w.lk.opts.TTL {
		return w.waitMoved(ctx, wr, d)
	}
	if wr == nil || i > win || w.ver == "" {
		return backoff.Sleep(ctx, d)
	}
	if w.ver == w.qWatched && time.Since(w.qWatchedAt) < w.lk.opts.PollInterval/4 {
		// The last watch returned early without a change: sleep this turn.
		return backoff.Sleep(ctx, d)
	}
	w.qWatched, w.qWatchedAt = w.ver, time.Now()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := wr.WaitChange(wctx, w.key(), w.ver); err != nil && wctx.Err() == nil {
		// The watch failed: sleep what is left of d.
		return backoff.Sleep(ctx, d-time.Since(w.qWatchedAt))
	}
	return ctx.Err()
}

// waitMoved waits d, or until MovedKey changes.
func (w *waiter) waitMoved(ctx context.Context, wr store.Watcher, d time.Duration) error {
	key := MovedKey(w.lk.key)
	if store.ValidateKey(key) != nil || time.Since(w.movedAt) < w.lk.opts.PollInterval/4 {
		// No such key, or the last watch returned early: sleep this turn.
		return backoff.Sleep(ctx, d)
	}
	e, err := w.lk.s.Get(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return backoff.Sleep(ctx, d)
	}
	w.movedAt = time.Now()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := wr.WaitChange(wctx, key, e.Version); err != nil && wctx.Err() == nil {
		return backoff.Sleep(ctx, d-time.Since(w.movedAt))
	}
	if wctx.Err() != nil {
		w.movedAt = time.Time{} // waited it out: no early return
	}
	return ctx.Err()
}

// waitAsHead sleeps d, or until the heartbeat is due or a lease of this
// Locker is released (then the head polls at once).
func (w *waiter) waitAsHead(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	d = max(min(d, time.Until(w.nextBeat)), 0)
	select {
	case <-wake:
		w.nextPoll = time.Now()
		return
	default:
	}
	if backoff.Wait(ctx, d, wake) == nil {
		select {
		case <-wake:
			w.nextPoll = time.Now()
		default:
		}
	}
}
