package lease

import (
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
)

// How a waiter times the line: when it first saw each ticket of the
// window (to take a silent one for gone), how fast the line moves (to
// read again before it is moved into the window), and how long it may
// wait between reads.

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
	d := backoff.Between(ahead*6/10, ahead*7/10)
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
