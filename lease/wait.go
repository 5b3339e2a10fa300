package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
// turn: only the head of the queue polls the record; the tickets of the
// window at the front heartbeat; the others re-read the queue, each less
// often the further back it is; and a ticket of the window that another
// waiter sees unchanged for its ticketExpiry is removed. Acquisition itself is
// TryAcquire's, so the queue decides only who tries, never who holds.
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
	// queueFailed takes a failed read or write of the queue: the error to
	// give up with, or for one worth retrying nil and the wait before the
	// next try.
	queueFailed := func(err error) (time.Duration, error) {
		if !queueRetryable(err) {
			return 0, err
		}
		failures++
		last = err
		lk.waiting(err)
		return retryDelay(lk.opts.PollInterval, failures), nil
	}
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
				if wait, err = queueFailed(err); err != nil {
					return nil, err
				}
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
			// The tickets of the window heartbeat; one of them seen
			// unchanged for its ticketExpiry is taken for gone, by
			// whoever of the window or behind it sees that first.
			win := lk.opts.queueWindow()
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
			if i < win {
				if !w.inWindow {
					// We just moved into the window: the others time
					// our ticket from now on.
					w.inWindow = true
					if !w.justWritten() {
						w.nextBeat = time.Now()
					}
				}
				if !time.Now().Before(w.nextBeat) {
					w.beat(ctx)
					continue
				}
			} else {
				w.inWindow = false
			}
			wait = lk.opts.queueInterval(i, len(w.q.Tickets))
			if i == 1 || i > win {
				// The window and the one behind it read on the beat (so
				// that each of them sees each heartbeat of the others
				// once, and no ticket's expiry timer runs out while it
				// still beats); the others spread their reads.
				wait = backoff.Jitter(wait)
			}
			wait = w.movingRead(i, win, wait)
			if i <= win {
				// Those in or right behind the window look again as soon
				// as another ticket of it may be taken for gone; the
				// others notice at their pace.
				for j := range min(win, len(w.q.Tickets)) {
					if j != i {
						wait = min(wait, w.left(j)+time.Millisecond)
					}
				}
			}
			if i < win {
				wait = min(wait, time.Until(w.nextBeat))
			}
			if err := w.waitQueue(ctx, max(wait, 0), i, win); err != nil {
				continue
			}
			if err := w.read(ctx); err != nil {
				if wait, err = queueFailed(err); err != nil {
					return nil, err
				}
				break
			}
			failures = 0
			continue
		default: // the head
			if !w.wasHead {
				// Our turn: heartbeat at once (the others have been
				// timing our ticket since it became the head), and poll,
				// unless the arrival's read of the record is fresh.
				w.wasHead, w.nextPoll, w.headSince = true, time.Now(), time.Now()
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
				w.served = time.Since(w.headSince)
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

// seenTicket is a ticket of the window as we first saw it, and when
// (monotonic).
type seenTicket struct {
	beat  string
	since time.Time
	// behind: we saw it just behind the window, not in it, as it is.
	behind bool
	// unnoticed: it moved into the window without being written since,
	// as far as we saw: its waiter has not noticed yet.
	unnoticed bool
}

// left is how long ticket j of the window has left before it may be
// taken for gone: its ticketExpiry from when we first saw it, as it is,
// in the window.
//
// On a store with a native watch the waiters of the window see every move
// of the line at once, and a ticket that moved into the window unnoticed
// by its waiter (asleep behind it, timing its reads by the line's pace)
// holds up the line if it reaches the head: it gets noticeGrace rather
// than half a TTL. A waiter taken for gone that way puts its ticket back
// with its old place when it wakes, so it loses little.
func (w *waiter) left(j int) time.Duration {
	t := w.q.Tickets[j]
	s := w.seen[t.ID]
	exp := ticketExpiry(t, w.lk.opts.TTL)
	if s.unnoticed && !t.Pulled && w.watcher() != nil {
		exp = min(exp, w.noticeGrace())
	}
	return exp - time.Since(s.since)
}

// noticeGrace is how long a waiter that the line moved into the window
// has to notice, when the line is seen to move: four places' time (it
// reads about every 0.6 of the time the line takes to bring it there),
// and at least a poll interval.
func (w *waiter) noticeGrace() time.Duration {
	if w.perPlace <= 0 {
		return w.lk.opts.TTL
	}
	return max(4*w.perPlace, w.lk.opts.PollInterval)
}

// expired returns the first ticket of the window, other than ours at
// place i, that may be taken for gone, or -1. Every waiter of the window
// or behind it times the others of the window (the ones behind it too:
// the next in line reads the queue often, and so sees a ticket that moves
// into the window soonest).
func (w *waiter) expired(i int) int {
	for j := range min(w.lk.opts.queueWindow(), len(w.q.Tickets)) {
		if j != i && w.left(j) <= 0 {
			return j
		}
	}
	return -1
}

// freshLook is how recent a look at the queue must be for a heartbeat to
// write on its version without reading it first.
const freshLook = 100 * time.Millisecond

// observe notes when we first saw each ticket of the window as it is now.
func (w *waiter) observe() {
	w.lookedAt = time.Now()
	w.looks++
	i := w.q.index(w.t.ID)
	w.in = i >= 0
	w.pace(i)
	if w.perPlace <= 0 && w.q.Pace > 0 && w.q.Pace < w.lk.opts.TTL {
		// Until we have seen the line move, believe the pace the last
		// waiter served measured.
		w.perPlace = w.q.Pace
	}
	win := w.lk.opts.queueWindow()
	seen := make(map[string]seenTicket, win+1)
	for k, t := range w.q.Tickets[:min(win+1, len(w.q.Tickets))] {
		s, ok := w.seen[t.ID]
		switch {
		case !ok || s.beat != t.Beat:
			s = seenTicket{beat: t.Beat, since: time.Now(), behind: k == win}
		case s.behind && k < win:
			s = seenTicket{beat: t.Beat, since: time.Now(), unnoticed: true}
		}
		seen[t.ID] = s
	}
	w.seen = seen
}

// pace updates our estimate of how long the line takes to move one place,
// from how far it moved since we last saw it move: quick to follow a line
// that speeds up, slow to believe one that slows down.
func (w *waiter) pace(i int) {
	now := time.Now()
	switch {
	case i < 0:
		return
	case w.placeAt.IsZero() || i > w.place:
		// First look, or we were put back further: start again here.
	case i < w.place:
		sample := now.Sub(w.placeAt) / time.Duration(w.place-i)
		if sample >= w.lk.opts.TTL {
			// The line stood (a long hold) rather than moved at that
			// pace; what follows the hold may be quick.
			w.perPlace = 0
		} else if w.perPlace == 0 {
			w.perPlace = sample
		} else {
			w.perPlace = min(sample, (w.perPlace+sample)/2)
		}
	default:
		return // the same place: keep timing from when we got here
	}
	w.place, w.placeAt = i, now
}

// movingRead caps the wait before the next read of the waiter at place
// i, behind the window of win tickets, so that it reads again before the
// line can have moved it into the window, at the pace it has seen: the
// window times a ticket from when it enters, and one whose waiter has not
// noticed yet would be taken for gone. A line that does not move leaves
// the budgeted wait as it is; one that moves costs about log(n) reads
// per waiter over its wait, the reads a waiter needs to follow it.
func (w *waiter) movingRead(i, win int, wait time.Duration) time.Duration {
	if i <= win && w.watcher() != nil {
		return wait // they wake on every change of the queue (waitQueue)
	}
	stood := time.Since(w.placeAt)
	if stood >= w.lk.opts.TTL {
		// The line has not moved us for a TTL: it is held, and the
		// budgeted wait applies until we see it move again.
		return wait
	}
	per := w.perPlace
	if per <= 0 {
		// We have not seen the line move, nor has anyone told us its
		// pace (Queue.Pace): it may move as fast as we may read.
		per = w.readFloor()
	}
	// The window and the one behind it, polling, read before the head
	// can have left: the next in line then becomes the head within
	// about one place's time.
	places := max(i-win, 1)
	if i <= win {
		places = i
	}
	// A line that has stood still since we saw ourselves here may start
	// again at its pace at any moment, but it may also be held for long:
	// read no sooner than 0.6 times the time it has stood, so that reads
	// grow geometrically apart while it stands (a few reads more per
	// waiter after the line stops, up to the budgeted wait).
	ahead := max(time.Duration(places)*per, stood)
	d := time.Duration(float64(ahead) * (0.6 + 0.1*rand.Float64()))
	return min(wait, max(d, w.readFloor()))
}

// readFloor is the shortest wait between two reads of the queue by a
// waiter behind the window that follows a moving line: PollInterval, or
// on a store with a native watch, where the window wakes on every queue
// change and so takes its turn at once, MinPollInterval, so that the
// line behind keeps up with holds shorter than a poll interval (the reads
// a waiter needs to follow the line stay about log(n) over its wait).
func (w *waiter) readFloor() time.Duration {
	if w.watcher() != nil {
		return MinPollInterval
	}
	return w.lk.opts.PollInterval
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
		// A little early, by a random part of a tenth: waiters that
		// arrived together do not stay in step and lose CASes to each
		// other at every beat.
		d := w.lk.opts.beatInterval()
		w.nextBeat = time.Now().Add(d - rand.N(d/10+1))
	}
	return err
}

// beat is the heartbeat of a ticket of the window. A failure is retried
// soon, well before the ticket may be taken for gone; the head keeps
// polling meanwhile.
func (w *waiter) beat(ctx context.Context) {
	if len(w.q.Tickets) > 1 && time.Since(w.lookedAt) > freshLook {
		// The others of the window have likely written since our last
		// look (they heartbeat too): read first rather than lose a CAS.
		w.ver = ""
	}
	if err := w.put(ctx); err != nil {
		w.nextBeat = time.Now().Add(retryDelay(w.lk.opts.beatInterval(), 1))
	}
}

// expel removes ticket j of the window, which we saw unchanged for its
// ticketExpiry, with every other ticket of the window that we saw
// unchanged as long (a run of dead waiters goes in one write), if each is
// still as we saw it and still in the window.
func (w *waiter) expel(ctx context.Context, j int) error {
	win := w.lk.opts.queueWindow()
	gone := map[string]string{}
	self := w.q.index(w.t.ID)
	for k := range min(win, len(w.q.Tickets)) {
		if k == j || (k != self && w.left(k) <= 0) {
			gone[w.q.Tickets[k].ID] = w.q.Tickets[k].Beat
		}
	}
	return w.update(ctx, func(q *Queue) bool {
		n := len(q.Tickets)
		inWindow := min(win, n)
		for k := inWindow - 1; k >= 0; k-- {
			if beat, ok := gone[q.Tickets[k].ID]; ok && q.Tickets[k].Beat == beat {
				q.Tickets = slices.Delete(q.Tickets, k, k+1)
			}
		}
		if len(q.Tickets) == n {
			return false
		}
		// Those who moved into the window at once, behind those still in
		// it, were pulled in.
		for k := inWindow - (n - len(q.Tickets)); k < min(win, len(q.Tickets)); k++ {
			if q.Tickets[k].ID != w.t.ID {
				q.Tickets[k].Pulled = true
			}
		}
		return true
	})
}

// leaveTimeout bounds leave: long enough to ride out a blip of the
// store, short enough that a caller giving up on a dead store is not held
// for a whole TTL (cas.Update now retries transient failures until its
// deadline). A ticket leave could not remove costs the others at most a
// TTL: they remove it once it has reached the head and stayed unchanged.
const leaveTimeout = 2 * time.Second

// leave removes our ticket: after acquiring, or when giving up. It runs
// with its own deadline (the shorter of leaveTimeout and the TTL), since
// ctx may have ended; if it fails, the ticket is removed by the others
// once it has reached the head and stayed unchanged for its TTL.
func (w *waiter) leave() {
	if !w.sent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(leaveTimeout, w.lk.opts.TTL))
	defer cancel()
	if err := w.update(ctx, func(q *Queue) bool {
		if !q.remove(w.t.ID) {
			return false
		}
		if w.served > 0 && w.served < w.lk.opts.TTL {
			// The time we stood at the head is the time between the
			// last two departures: how long the line takes to move
			// one place, for those who have not seen it move yet.
			if q.Pace > 0 {
				q.Pace = min(w.served, (q.Pace+w.served)/2)
			} else {
				q.Pace = w.served
			}
		}
		return true
	}); err != nil {
		return
	}
	if w.served > 0 && w.watcher() != nil && store.ValidateKey(MovedKey(w.lk.key)) == nil {
		// Wake the waiters that sleep on the line standing still.
		_, _ = w.lk.s.Put(ctx, MovedKey(w.lk.key), []byte(newNonce()), store.Unconditional)
	}
	if len(w.q.Tickets) == 0 && w.ver != "" && w.lk.s.Capabilities().CompareAndDelete {
		// The last one out deletes the emptied line, if nobody has
		// written it since; a line that stays empty costs nothing, so a
		// failure is left alone. The ticket numbers start again from 1,
		// which only matters to a waiter whose ticket was removed while
		// it was paused: it puts it back behind the newcomers.
		_ = w.lk.s.Delete(ctx, w.key(), store.IfMatch(w.ver))
	}
}
