package lease

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"
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
// in and checked.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Holder == "" {
		r.Holder = DefaultHolder()
	}
	if r.TTL == 0 {
		r.TTL = DefaultTTL
	}
	if r.Margin == 0 {
		r.Margin = r.TTL / 5
	}
	if r.RenewInterval == 0 {
		r.RenewInterval = (r.TTL - r.Margin) / 3
	}
	if r.PollInterval == 0 {
		r.PollInterval = min(max(r.TTL/10, MinPollInterval), MaxPollInterval)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.PollBudget == 0 {
		r.PollBudget = DefaultPollBudget
	}
	if r.QueueRetryDelay == 0 {
		r.QueueRetryDelay = DefaultQueueRetryDelay
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
	case o.Margin <= 0 || o.Margin >= o.TTL/2:
		return bad("Margin %v must be positive and less than half the TTL %v", o.Margin, o.TTL)
	case o.RenewInterval <= 0 || o.RenewInterval > (o.TTL-o.Margin)/2:
		return bad("RenewInterval %v must be positive and at most (TTL−Margin)/2 = %v, so a failed renew can be retried before the lease is lost",
			o.RenewInterval, (o.TTL-o.Margin)/2)
	case o.PollInterval <= 0 || o.PollInterval > o.TTL:
		return bad("PollInterval %v must be positive and at most the TTL %v", o.PollInterval, o.TTL)
	case !(o.PollBudget > 0) || math.IsInf(o.PollBudget, 0):
		return bad("PollBudget %v must be a positive number of requests per second (zero means %v)", o.PollBudget, DefaultPollBudget)
	case o.QueueRetryDelay < 0:
		return bad("QueueRetryDelay %v must not be negative (zero means %v)", o.QueueRetryDelay, DefaultQueueRetryDelay)
	}
	return nil
}

// beatInterval is how often the head of the queue writes its ticket.
func (o Options) beatInterval() time.Duration { return o.TTL / 3 }

// headInterval is how often the head of the queue re-reads the record:
// PollInterval, or less often when half the PollBudget, less the head's
// heartbeats, allows less (but at least an eighth of the budget).
func (o Options) headInterval() time.Duration {
	rate := max(o.PollBudget/2-1/o.beatInterval().Seconds(), o.PollBudget/8)
	return max(o.PollInterval, time.Duration(float64(time.Second)/rate))
}

// queueInterval is how often the waiter at position p ≥ 1 (0 is the head)
// of a queue of n tickets re-reads the queue: p·c, where c is chosen so
// that the n−1 waiters behind the head together read at 90% of the rate
// the budget leaves after the head's reads and the heartbeats of the head
// and the next in line: Σ 1/(p·c) =
// H(n−1)/c. Nobody needs to read more often than its place moves: the
// waiter at p becomes the head after p departures. c is at least
// PollInterval (a short queue need not spend the whole budget: the next
// in line reads no more often than the head does) and at most TTL/4, so
// that the next in line notices its turn well within the TTL after which
// the others would take its ticket for abandoned; with a TTL below about
// 4·H(n−1)/PollBudget seconds that cap, not the budget, sets the rate.
func (o Options) queueInterval(p, n int) time.Duration {
	// Two heartbeats per beat interval, the head's a read and a write,
	// the next's a write and, when the head wrote since its last look,
	// a lost CAS and a read more.
	rest := o.PollBudget - 1/o.headInterval().Seconds() - 4/o.beatInterval().Seconds()
	rest = 0.9 * max(rest, o.PollBudget/8)
	h := 0.0
	for k := 1; k < n; k++ {
		h += 1 / float64(k)
	}
	c := time.Duration(h / rest * float64(time.Second))
	c = max(min(max(c, o.PollInterval), o.TTL/4), MinPollInterval)
	return time.Duration(p) * c
}
