package cas

import (
	"cmp"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/internal/optcheck"
)

// Defaults used where Options leaves a field zero.
const (
	DefaultMaxAttempts = 10
	// DefaultTransientBudget is how long an Update without a deadline
	// rides out transient failures: longer than a leader election of
	// etcd or Consul (a few seconds) or a restart of latchkey serve.
	DefaultTransientBudget = 10 * time.Second
	DefaultBaseDelay       = 2 * time.Millisecond
	DefaultMaxDelay        = 250 * time.Millisecond
)

// Options tune Update. A nil *Options and every zero field mean the
// defaults above; negative values are an error.
type Options struct {
	// MaxAttempts bounds the attempts that may lose a race: once this many
	// writes have been refused with ErrConflict, Update gives up with a
	// *ContendedError. Zero means DefaultMaxAttempts.
	MaxAttempts int

	// TransientBudget bounds how long an Update without a deadline keeps
	// retrying the failures that leave the key untouched and may be
	// retried as they are: ErrTransient from any operation, an
	// ErrUnknownOutcome on a read, and a write of unknown outcome that a
	// re-read showed had not been applied. An Update with a deadline (ctx
	// has one, or Timeout is set) retries them until that deadline,
	// however many there are, and ignores TransientBudget; one without
	// retries them until TransientBudget has passed since the first of
	// them. Each retry waits a backoff (below), so an outage costs a few
	// requests a second. When no backoff fits before the end, Update
	// returns the last such error (matching ErrUnknownOutcome too once a
	// write's outcome was unknown), saying how many failures it met over
	// how long and what ended the retries. Zero means
	// DefaultTransientBudget.
	TransientBudget time.Duration

	// BaseDelay is the least ceiling of the first backoff; the ceiling
	// doubles with every retry of the same kind up to MaxDelay, and each
	// sleep is drawn uniformly from [0, ceiling) (full jitter). Zero means
	// DefaultBaseDelay.
	//
	// After a transient failure the first ceiling is BaseDelay. After a
	// lost race it is the largest of BaseDelay, the duration of the read
	// and write that lost (the store's round trip under its present load:
	// retrying sooner than one round trip mostly loses again), and the
	// ceiling the last Update of the same key on the same store ended
	// with, halved (contention is remembered in-process for about a
	// second, so that each Update under contention does not start again
	// from BaseDelay and lose log2(writers) races before its retries
	// spread). An Update in the waiting line of its key (see Update)
	// backs off less once at its front: a draw under twice the duration
	// of its last attempt (at least BaseDelay), since only a few race
	// there. Whatever its start, no ceiling exceeds MaxDelay, and the
	// first attempt of an Update never sleeps a backoff. (It may wait for
	// another Update of the same key through the same store, in this
	// process, to finish its attempt: see Update. That wait is not a
	// backoff, and it too ends after MaxDelay.)
	BaseDelay time.Duration

	// MaxDelay caps the backoff ceiling, and how long an Update waits for
	// the turn of its key while one holder keeps it; 4 MaxDelays cap the
	// wait between two reads of the waiting line, and a ticket of the line
	// that stands at its front for 4 MaxDelays is taken for gone. Zero
	// means DefaultMaxDelay.
	MaxDelay time.Duration

	// Timeout, when positive, is a budget for the whole Update: no new
	// attempt starts and no backoff sleeps past it, and Update then gives
	// up with a *ContendedError whose Deadline is true (or, when it was
	// retrying a transient failure, with that failure: see
	// TransientBudget). An operation in flight is not interrupted (so it
	// cannot become an unknown outcome because of the budget); cancel ctx
	// for a hard stop. Zero means no budget beyond ctx.
	Timeout time.Duration

	// UniqueValues promises that every value the Func returns is one no
	// other writer would write (it carries a nonce, a writer id, a
	// sequence number of this writer). It lets Update count a write of
	// unknown outcome as applied when a re-read shows exactly its bytes,
	// also after a resend of it lost its race; see Update.
	UniqueValues bool
}

// withDefaults returns a copy of o with zero fields set to the defaults,
// or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(
		optcheck.Named("MaxAttempts", r.MaxAttempts), optcheck.Named("TransientBudget", r.TransientBudget),
		optcheck.Named("BaseDelay", r.BaseDelay), optcheck.Named("MaxDelay", r.MaxDelay), optcheck.Named("Timeout", r.Timeout),
	); err != nil {
		return r, err
	}
	r.MaxAttempts = cmp.Or(r.MaxAttempts, DefaultMaxAttempts)
	r.TransientBudget = cmp.Or(r.TransientBudget, DefaultTransientBudget)
	r.BaseDelay = cmp.Or(r.BaseDelay, DefaultBaseDelay)
	r.MaxDelay = cmp.Or(r.MaxDelay, DefaultMaxDelay)
	if r.BaseDelay > r.MaxDelay {
		r.BaseDelay = r.MaxDelay
	}
	return r, nil
}

// policy is the backoff between transient retries: the ceiling before
// retry n (n >= 1) is BaseDelay·2^(n-1), capped at MaxDelay, and each
// sleep is drawn from [0, ceiling) (full jitter). Conflict retries start
// from firstCeiling instead of BaseDelay.
func (o Options) policy() backoff.Policy {
	return backoff.Policy{Base: o.BaseDelay, Max: o.MaxDelay}
}
