package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

	sent bool                  // a write of our ticket was sent (it may be in the queue)
	in   bool                  // our ticket is in q as last read or written
	q    Queue                 // the queue as last read or written
	ver  store.Version         // its version; "" when absent or not known
	seen map[string]seenTicket // the tickets of the window, as first seen

	wasHead   bool
	wasNext   bool
	nextBeat  time.Time // when the head writes its ticket again
	nextPoll  time.Time // when the head reads the record again
	watched   store.Version
	watchedAt time.Time
	lastHeld  *HeldError // the last read of the record that found it held
	heldAt    time.Time
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
// turn: only the head of the queue polls the record (and heartbeats its
// ticket); the others re-read the queue, each less often the further back
// it is, and the waiter just behind a head whose ticket stays unchanged for
// its TTL removes it. Acquisition itself is TryAcquire's, so the queue
// decides only who tries, never who holds.
func (lk *Locker) acquireQueued(ctx context.Context) (*Lease, error) {
	w := &waiter{lk: lk, t: Ticket{ID: newNonce(), Holder: lk.opts.Holder, Since: lk.opts.Now(), TTL: lk.opts.TTL}}
	defer w.leave()

	var last error
	l, err := lk.tryAcquire(ctx, w.nobodyWaits)
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &w.lastHeld):
		last, w.heldAt = err, time.Now()
		lk.waiting(err)
	case errors.Is(err, errOthersWait), errors.Is(err, ErrLostRace), retryable(err):
	default:
		return nil, err
	}
	quick, failures := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return nil, fmt.Errorf("lease: acquire %q: %w; last attempt: %w", lk.key, err, last)
			}
			return nil, fmt.Errorf("lease: acquire %q: %w", lk.key, err)
		}
		var wait time.Duration
		wake := lk.wakeChan()
		i := w.q.index(w.t.ID)
		switch {
		case !w.in || i < 0:
			// Take our place, or take it back after the ticket was
			// removed (we were slow to heartbeat, or the queue was deleted):
			// an old ticket keeps its Seq, hence its place.
			if err := w.put(ctx); err != nil {
				if !queueRetryable(err) {
					return nil, err
				}
				failures++
				last = err
				lk.waiting(err)
				wait = retryDelay(lk.opts.PollInterval, failures)
				break
			}
			failures = 0
			if ahead := w.q.index(w.t.ID); ahead > 0 {
				last = &QueuedError{Key: lk.key, Ahead: ahead, Held: w.lastHeld}
				lk.waiting(last)
			}
			continue
		case i > 0:
			w.wasHead = false
			// The head and the next in line heartbeat; one of them seen
			// unchanged for its TTL is taken for gone, by whoever is
			// behind it.
			if j := w.expired(i); j >= 0 {
				if err := w.expel(ctx, j); err != nil {
					if !queueRetryable(err) {
						return nil, err
					}
					failures++
					wait = retryDelay(lk.opts.PollInterval, failures)
					break
				}
				continue
			}
			if i == 1 {
				if !w.wasNext {
					w.wasNext = true
					if !w.justWritten() {
						w.nextBeat = time.Now()
					}
				}
				if !time.Now().Before(w.nextBeat) {
					w.beat(ctx)
					continue
				}
			} else {
				w.wasNext = false
			}
			wait = backoff.Jitter(lk.opts.queueInterval(i, len(w.q.Tickets)))
			if i <= window {
				// Those right behind the window look again as soon as a
				// ticket in it may be taken for gone; the others notice
				// at their pace.
				for j := range min(i, window) {
					wait = min(wait, w.left(j)+time.Millisecond)
				}
			}
			if i == 1 {
				wait = min(wait, time.Until(w.nextBeat))
			}
			if err := backoff.Sleep(ctx, max(wait, 0)); err != nil {
				continue
			}
			if err := w.read(ctx); err != nil {
				if !queueRetryable(err) {
					return nil, err
				}
				failures++
				last = err
				lk.waiting(err)
				wait = retryDelay(lk.opts.PollInterval, failures)
				break
			}
			failures = 0
			continue
		default: // the head
			if !w.wasHead {
				// Our turn: heartbeat at once (the others have been
				// timing our ticket since it became the head), and poll,
				// unless the arrival's read of the record is fresh.
				w.wasHead, w.nextPoll = true, time.Now()
				if !w.justWritten() {
					w.nextBeat = time.Now()
				}
				if w.lastHeld != nil && time.Since(w.heldAt) < lk.opts.headInterval()/2 {
					w.waitForRecord(ctx, w.lastHeld, wake)
					continue
				}
			}
			if !time.Now().Before(w.nextBeat) {
				w.beat(ctx)
				if w.q.index(w.t.ID) != 0 {
					continue
				}
			}
			if time.Now().Before(w.nextPoll) {
				if w.watcher() != nil && w.lastHeld != nil {
					w.waitForRecord(ctx, w.lastHeld, wake)
				} else {
					w.waitAsHead(ctx, time.Until(w.nextPoll), wake)
				}
				continue
			}
			l, err := lk.TryAcquire(ctx)
			if err == nil {
				return l, nil
			}
			var held *HeldError
			switch {
			case errors.As(err, &held):
				last, quick, failures, w.lastHeld, w.heldAt = err, 0, 0, held, time.Now()
				lk.waiting(err)
				w.waitForRecord(ctx, held, wake)
				continue
			case errors.Is(err, ErrLostRace):
				quick++
				if quick <= maxQuickRetries {
					continue
				}
				quick = 0
				wait = backoff.Jitter(lk.opts.headInterval())
			case retryable(err):
				if ctx.Err() != nil {
					continue
				}
				failures++
				last = err
				lk.waiting(err)
				wait = retryDelay(lk.opts.PollInterval, failures)
			default:
				return nil, err
			}
			w.nextPoll = time.Now().Add(wait)
			continue
		}
		_ = backoff.Wait(ctx, wait, wake)
	}
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

// window is how many tickets at the front of the queue heartbeat and are
// timed: the head, and the next in line, so that two waiters killed one
// behind the other are both found out in one TTL.
const window = 2

// seenTicket is a ticket in the window as we first saw it, and when
// (monotonic).
type seenTicket struct {
	beat  string
	since time.Time
}

// left is how long ticket j (< window) has left before it may be taken
// for gone: its TTL from when we first saw it, as it is, in the window.
func (w *waiter) left(j int) time.Duration {
	t := w.q.Tickets[j]
	ttl := t.TTL
	if ttl <= 0 {
		ttl = w.lk.opts.TTL
	}
	return ttl - time.Since(w.seen[t.ID].since)
}

// expired returns the first ticket in the window ahead of place i that
// may be taken for gone, or -1.
func (w *waiter) expired(i int) int {
	for j := range min(i, window, len(w.q.Tickets)) {
		if w.left(j) <= 0 {
			return j
		}
	}
	return -1
}

// observe notes when we first saw each ticket of the window as it is now.
func (w *waiter) observe() {
	w.in = w.q.index(w.t.ID) >= 0
	seen := make(map[string]seenTicket, window)
	for _, t := range w.q.Tickets[:min(window, len(w.q.Tickets))] {
		s, ok := w.seen[t.ID]
		if !ok || s.beat != t.Beat {
			s = seenTicket{beat: t.Beat, since: time.Now()}
		}
		seen[t.ID] = s
	}
	w.seen = seen
}

func (w *waiter) key() string { return QueueKey(w.lk.key) }

// read re-reads the queue. A queue record that is not one counts as
// empty; the next write replaces it.
func (w *waiter) read(ctx context.Context) error {
	e, err := w.lk.s.Get(ctx, w.key())
	switch {
	case errors.Is(err, store.ErrNotFound):
		w.q, w.ver = Queue{}, ""
	case err != nil:
		return fmt.Errorf("lease: acquire %q: reading the queue: %w", w.lk.key, err)
	default:
		q, derr := decodeQueue(w.lk.key, e.Value)
		if derr != nil {
			q = Queue{}
		}
		w.q, w.ver = q, e.Version
	}
	w.observe()
	return nil
}

// queueCAS bounds one queue write's compare-and-swap loop.
func (w *waiter) queueCAS() *cas.Options {
	d := w.lk.opts.QueueRetryDelay
	return &cas.Options{MaxAttempts: 20, BaseDelay: d, MaxDelay: 32 * d, UniqueValues: true}
}

// update applies change to the queue: first as one write conditioned on
// the version we last saw, then, if that lost a race or its outcome is
// unknown, through cas.Update. Every change is idempotent (put our
// ticket, remove a ticket), so re-applying one that landed is harmless.
func (w *waiter) update(ctx context.Context, change func(q *Queue) bool) error {
	if w.ver != "" {
		q := w.q.clone()
		if !change(&q) {
			return nil
		}
		v, err := w.lk.s.Put(ctx, w.key(), q.encode(), store.IfMatch(w.ver))
		if err == nil {
			w.q, w.ver = q, v
			w.observe()
			return nil
		}
		if !errors.Is(err, store.ErrConflict) && !retryable(err) {
			return fmt.Errorf("lease: acquire %q: queue: %w", w.lk.key, err)
		}
	}
	var got Queue
	res, err := cas.Update(ctx, w.lk.s, w.key(), func(cur []byte, exists bool) (cas.Decision, error) {
		var q Queue
		if exists {
			q, _ = decodeQueue(w.lk.key, cur) // not a queue: replace it
		}
		if !change(&q) {
			got = q
			return cas.Abort(), nil
		}
		b := q.encode()
		got = q
		return cas.Set(b), nil
	}, w.queueCAS())
	if err != nil {
		return fmt.Errorf("lease: acquire %q: queue: %w", w.lk.key, err)
	}
	w.q, w.ver = got, res.Entry.Version
	if !res.Exists && res.Outcome != cas.Written {
		w.ver = ""
	}
	w.observe()
	return nil
}

// put writes our ticket with a fresh beat: our arrival, a heartbeat, or
// taking our place back.
func (w *waiter) put(ctx context.Context) error {
	w.t.Beat = newNonce()
	w.sent = true
	err := w.update(ctx, func(q *Queue) bool {
		t := q.put(w.t)
		w.t.Seq = t.Seq
		return true
	})
	if err == nil {
		w.nextBeat = time.Now().Add(w.lk.opts.beatInterval())
	}
	return err
}

// beat is the heartbeat of the head and of the next in line. A failure is retried at the next beat,
// soon: the head keeps polling meanwhile.
func (w *waiter) beat(ctx context.Context) {
	if w.q.index(w.t.ID) == 0 && len(w.q.Tickets) > 1 {
		// The next in line has likely written since our last look
		// (it heartbeats too): read first rather than lose a CAS.
		w.ver = ""
	}
	if err := w.put(ctx); err != nil {
		w.nextBeat = time.Now().Add(retryDelay(w.lk.opts.beatInterval(), 1))
	}
}

// expel removes ticket j of the window, which we saw unchanged for its
// TTL, if it is still as we saw it and still in the window.
func (w *waiter) expel(ctx context.Context, j int) error {
	id, beat := w.q.Tickets[j].ID, w.q.Tickets[j].Beat
	return w.update(ctx, func(q *Queue) bool {
		k := q.index(id)
		if k < 0 || k >= window || q.Tickets[k].Beat != beat {
			return false
		}
		q.Tickets = slices.Delete(q.Tickets, k, k+1)
		return true
	})
}

// leave removes our ticket: after acquiring, or when giving up. It runs
// with its own deadline, since ctx may have ended; if it fails, the ticket
// is removed by the others once it has reached the head and stayed
// unchanged for its TTL.
func (w *waiter) leave() {
	if !w.sent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.lk.opts.TTL)
	defer cancel()
	_ = w.update(ctx, func(q *Queue) bool { return q.remove(w.t.ID) })
}
