package lease

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/latchkey/latchkey/internal/optcheck"
)

// Limits and defaults of Options.
const (
	// DefaultTTL is the TTL when Options.TTL is zero.
	DefaultTTL = 15 * time.Second
	// MinTTL is the shortest TTL accepted.
	MinTTL = 10 * time.Millisecond
	// MinPollInterval and MaxPollInterval clamp the default PollInterval.
	MinPollInterval = 10 * time.Millisecond
	MaxPollInterval = 2 * time.Second
	// QuickRetries is how many times in a row Acquire retries at once
	// after ErrLostRace before it waits a poll interval; a caller that
	// loops on TryAcquire itself can bound its retries the same way.
	QuickRetries = maxQuickRetries
	// DefaultPollBudget is the PollBudget when Options.PollBudget is zero,
	// in requests per second: within what S3, GCS and Azure serve for one
	// key, and with the holder's renews still under five a second.
	DefaultPollBudget = 4.0
	// DefaultQueueRetryDelay is the QueueRetryDelay when
	// Options.QueueRetryDelay is zero.
	DefaultQueueRetryDelay = 20 * time.Millisecond
)

// Options tune a Locker. A nil *Options means every default. Each zero
// field takes the default written beside it.
type Options struct {
	// Holder names the holder in the record, for people and tools; it is
	// never used to decide ownership (the nonce is). Zero: "<hostname>:<pid>".
	Holder string

	// TTL is how long a record may stay unchanged before a contender may
	// take it over. Zero: DefaultTTL. At least MinTTL.
	TTL time.Duration

	// Margin is how long before TTL, counted from the start of its last
	// successful renew, the holder regards the lease as lost. It must cover
	// the time the holder needs to stop its work and the difference between
	// two hosts' monotonic clock rates over one TTL. Zero: TTL/5. It must be
	// positive and less than TTL/2.
	Margin time.Duration

	// RenewInterval is how often Hold and Run renew the lease. Zero:
	// (TTL−Margin)/3. It must be positive and at most (TTL−Margin)/2, so
	// that a failed renew can be retried before the lease is lost.
	RenewInterval time.Duration

	// PollInterval is how often Acquire re-reads a record held by someone
	// else (each wait jittered to 50%–150%). Zero: TTL/10 clamped to
	// [MinPollInterval, MaxPollInterval]. It must be positive and at most
	// TTL.
	PollInterval time.Duration

	// NoQueue turns the waiting line off: every waiting Locker then polls
	// the record itself, every PollInterval, and whoever reads a release
	// first takes the lease (the behaviour before queues existed). By
	// default Acquire takes a ticket in the queue at QueueKey(key) and
	// waiters are served in arrival order (see the package doc).
	NoQueue bool

	// PollBudget is how many requests per second all the queued waiters
	// of one lease, in every process, make together while it is held
	// (their arrivals and departures aside). The head of the queue reads
	// the record every max(PollInterval, 2/PollBudget) seconds; the
	// others share what is left. Each waiter computes its share from its
	// own PollBudget, so waiters of one lease should agree on it. Zero:
	// DefaultPollBudget. It must not be negative; it does not apply with
	// NoQueue.
	PollBudget float64

	// QueueRetryDelay is the first backoff of a queue write that lost a
	// race with another waiter's (doubling up to 32 times it). Zero:
	// DefaultQueueRetryDelay. On a store that takes about one write per
	// second per object (GCS), use a second, so that a crowd arriving at
	// once spreads its writes. It must not be negative.
	QueueRetryDelay time.Duration

	// Waiting, if set, is called by Acquire after every attempt that did
	// not acquire the lease and will be followed by another: with the
	// *HeldError while someone holds it, or with the store's error while
	// the store fails. For messages to people (lock run's "waiting for").
	Waiting func(err error)

	// Now returns the wall-clock time written into records for people and
	// tools, and compared with a record's times only for the Stale hint of
	// HeldError. It is never used to decide a takeover. Zero: time.Now.
	Now func() time.Time
}

// DefaultHolder is the holder name used when Options.Holder is empty:
// "<hostname>:<pid>".
func DefaultHolder() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// ErrOptions is matched by every error of Options.Validate.
var ErrOptions = errors.New("invalid lease options")

// withDefaults returns a copy of o (nil allowed) with zero fields filled
// in and checked: a negative field is an error naming it, never quietly
// the default.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(
		optcheck.Named("TTL", r.TTL), optcheck.Named("Margin", r.Margin),
		optcheck.Named("RenewInterval", r.RenewInterval), optcheck.Named("PollInterval", r.PollInterval),
		optcheck.Named("PollBudget", r.PollBudget), optcheck.Named("QueueRetryDelay", r.QueueRetryDelay),
	); err != nil {
		return r, fmt.Errorf("lease: %w: %w", ErrOptions, err)
	}
	if r.Holder == "" {
		r.Holder = DefaultHolder()
	}
	r.TTL = cmp.Or(r.TTL, DefaultTTL)
	r.Margin = cmp.Or(r.Margin, r.TTL/5)
	r.RenewInterval = cmp.Or(r.RenewInterval, (r.TTL-r.Margin)/3)
	r.PollInterval = cmp.Or(r.PollInterval, min(max(r.TTL/10, MinPollInterval), MaxPollInterval))
	r.PollBudget = cmp.Or(r.PollBudget, DefaultPollBudget)
	r.QueueRetryDelay = cmp.Or(r.QueueRetryDelay, DefaultQueueRetryDelay)
	if r.Now == nil {
		r.Now = time.Now
	}
	return r, r.check()
}

// Validate reports, with an error matching ErrOptions, the first field of
// o (after defaults) that breaks its documented rule.
func (o *Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

func (o Options) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("lease: %w: %s", ErrOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.TTL < MinTTL:
		return bad("TTL %v is shorter than the minimum %v", o.TTL, MinTTL)
	case o.Margin >= o.TTL/2:
		return bad("Margin %v must be less than half the TTL %v", o.Margin, o.TTL)
	case o.RenewInterval > (o.TTL-o.Margin)/2:
		return bad("RenewInterval %v must be at most (TTL−Margin)/2 = %v, so a failed renew can be retried before the lease is lost",
			o.RenewInterval, (o.TTL-o.Margin)/2)
	case o.PollInterval > o.TTL:
		return bad("PollInterval %v must be at most the TTL %v", o.PollInterval, o.TTL)
	case math.IsNaN(o.PollBudget) || math.IsInf(o.PollBudget, 0):
		return bad("PollBudget %v must be a finite number of requests per second (zero means %v)", o.PollBudget, DefaultPollBudget)
	}
	return nil
}

// beatInterval is how often the tickets of the window at the front of the
// queue are written again by their waiters.
func (o Options) beatInterval() time.Duration { return o.TTL / 3 }

// ticketExpiry is how long a ticket of the window may be seen unchanged,
// on the observer's monotonic clock, before it is taken for gone: half its
// waiter's TTL, a heartbeat and a half.
//
// A waiter in the window heartbeats every beatInterval, so it is then half
// a heartbeat late at least (it may be paused, or its store slow: it puts
// the ticket back with its old place). One that has just moved into the
// window writes its ticket as soon as it notices, at its next read of the
// queue, which it times to come before the line could have moved it there
// one place at a time (waiter.movingRead). The next in line reads every
// c and times every other ticket of the window, and the others of the
// window read at least once a heartbeat, so a waiter that dies in the
// window is found out within 5/6 of a TTL of its last heartbeat, and one
// that died further back within half a TTL of the first look of a waiter
// behind it after it reached the window; it reaches the head later, by
// the holds of the waiters still ahead of it.
//
// A ticket Pulled into the window, several places at once, by the removal
// of tickets taken for gone gets its whole TTL: its waiter could not time
// its read for that. So a run of more than a window's worth of dead
// waiters costs up to a TTL more for the next window's worth.
//
// A line can also move faster than a waiter has seen it move (above all
// when it starts moving after a long hold): a live waiter that has not
// noticed it reached the window within half a TTL is taken for gone,
// puts its ticket back with its old place, and may lose that one turn.
func ticketExpiry(t Ticket, def time.Duration) time.Duration {
	ttl := t.TTL
	if ttl <= 0 {
		ttl = def
	}
	if t.Pulled {
		return ttl
	}
	return ttl / 2
}

// queueWindow is how many tickets at the front of the queue heartbeat and
// are timed, so that a run of that many waiters dead one behind the other
// is found out at once, within one TTL, rather than one or two per TTL.
// Each costs a read and a write per beatInterval, 6/TTL requests per
// second; the window takes at most 30% of the PollBudget for them:
// PollBudget·TTL/20 tickets (three at the defaults), at least two (the
// head and the next in line) and at most eight.
func (o Options) queueWindow() int {
	w := int(math.Floor(o.PollBudget*o.TTL.Seconds()/20 + 1e-9))
	return min(max(w, 2), 8)
}

// headInterval is how often the head of the queue re-reads the record:
// PollInterval, or less often when half the PollBudget, less the head's
// heartbeats, allows less (but at least an eighth of the budget).
func (o Options) headInterval() time.Duration {
	rate := max(o.PollBudget/2-2/o.beatInterval().Seconds(), o.PollBudget/8)
	return max(o.PollInterval, time.Duration(float64(time.Second)/rate))
}

// queueInterval is how often the waiter at position p ≥ 1 (0 is the head)
// of a queue of n tickets re-reads the queue, with w = queueWindow():
//   - the tickets of the window read when they heartbeat, every
//     beatInterval;
//   - the next in line also reads every c, to notice its turn soon, and
//     so does the first one behind the window, who sees a ticket enter the
//     window first and times it from then; both at least once a
//     heartbeat;
//   - behind them, the waiter at p reads every p·c.
//
// c is chosen so that the reads of those two and of the line behind the
// window together come to 80% of the rate the budget leaves after the
// head's reads, the window's heartbeats and a read per heartbeat of the
// one behind it: (2 + H(n−1) − H(w))/c; the rest is the jitter's. Nobody
// needs to read more often than its place moves: the waiter at p becomes
// the head after p departures, and a waiter that sees the line move
// faster than that reads sooner (waiter.movingRead). c is at least
// PollInterval: a short queue need not spend the whole budget.
func (o Options) queueInterval(p, n int) time.Duration {
	w := o.queueWindow()
	beat := o.beatInterval()
	if p > 1 && p < w {
		return beat
	}
	// Each heartbeat is a read and a write (the others of the window
	// write too, so a beat reads first rather than lose a CAS). The
	// head's polls are jittered: on average ln 3 ≈ 1.1 times their
	// nominal rate.
	rest := o.PollBudget - 1.1/o.headInterval().Seconds() - float64(2*w+1)/beat.Seconds()
	rest = 0.8 * max(rest, o.PollBudget/8)
	h := 2.0
	for k := w + 1; k < n; k++ {
		h += 1 / float64(k)
	}
	c := time.Duration(h / rest * float64(time.Second))
	c = max(c, o.PollInterval, MinPollInterval)
	if p == 1 || p == w {
		return min(c, beat)
	}
	return time.Duration(p) * c
}
