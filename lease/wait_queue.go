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

// A waiter's reads and writes of the queue record: read, the idempotent
// changes (put, beat, expel, leave) and update, which applies them.

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
		w.nextBeat = time.Now().Add(backoff.Between(d-d/10, d))
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
