package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// Result says what Update did.
type Result struct {
	Outcome Outcome
	// Entry is the key's state as the outcome left it: the written value
	// and its new version (Written); the state the function last saw
	// (Aborted; Exists false when the key was absent); only Key (Deleted).
	Entry  store.Entry
	Exists bool
	// Attempts counts the calls of the function.
	Attempts int
}

// Update reads key from s, calls fn with its current state, and applies
// fn's Decision with a write conditioned on the state it read: IfAbsent
// when the key was absent, IfMatch(the version read) when it existed. When
// the write loses a race (store.ErrConflict), Update backs off, reads the
// key again and calls fn again; it never retries a write with a version it
// has seen go stale.
//
// Updates of one key through one store value, in this process, take
// turns: each attempt (the read, fn and the write) waits until no other
// is in flight, so goroutines of one process never race each other for
// nothing. Writers elsewhere still race, and the write is conditional as
// ever; a turn is not a lock. An attempt waits at most MaxDelay for one
// holder (a function or request that hangs), then goes ahead without the
// turn. Waiting ends with ctx and with Options.Timeout. So fn must not
// call Update for the same key and store (it would wait MaxDelay for
// itself, then lose its race to its own write). Stores whose dynamic type
// cannot be compared with == take no turns.
//
// Updates of one key from different processes (or store values) are
// served roughly in arrival order: an Update that lost two races takes a
// ticket in the key's waiting line, a few records under LinePrefix(key)
// in the same store, and waits there until it is among the first few
// (on a store that can watch a key, store.Watcher, by watching the ticket
// whose departure lets it in; elsewhere by listing the line now and
// then); only those race for the key, with short backoffs. An Update whose
// process left others in the line takes its ticket before its first
// attempt, so the last winner goes to the back; one whose process keeps
// winning the key at once (Updates within a second of each other) lists
// the line at the 8th win and then ever more rarely while it is empty,
// down to one in 256, and goes behind the others it finds there. The
// line is read and written with the store's ordinary operations, costs
// nothing when the first attempt wins (bar those listings of a loop on
// one key: 7 in its first 1,000 Updates), and never decides a write: a
// write is conditional as ever, and an Update whose line fails goes on
// without it. Tickets of
// Updates that died are passed after 4 MaxDelays. Keys under ".latchkey/"
// have no line. See line.go for the design and its costs.
//
// It returns the Result on success (the Decision applied, or fn chose
// Abort). Otherwise it returns an error, and the Result so far:
//
//   - fn's error, wrapped, when fn fails; nothing was written.
//   - an error matching ErrContended (a *ContendedError) when
//     Options.MaxAttempts writes lost their race or Options.Timeout passed;
//     nothing was written.
//   - an error matching store.ErrUnknownOutcome when a write's outcome is
//     unknown and could not be resolved (below). Once one write's outcome
//     is unknown, every error Update returns matches it, whatever else it
//     matches: that write may still apply.
//   - the last transient error, wrapped, when the retries of transient
//     failures reached the deadline (ctx's or Options.Timeout) or, without
//     one, Options.TransientBudget.
//   - ctx's cause when ctx ends between operations, or the store's error
//     for an operation ctx interrupted (which may be an unknown outcome).
//   - any other store error (ErrInvalidKey, ErrUnsupported, ErrClosed, ...)
//     at once. Update also fails with ErrUnsupported up front when the
//     store does not declare CreateIfAbsent and CompareAndSwap, and when fn
//     asks for a delete on a store without CompareAndDelete.
//
// # Writes of unknown outcome
//
// When a write fails with store.ErrUnknownOutcome (a timeout, a reset
// connection, a 5xx after the request was sent), it may or may not have
// been applied, and it may still be applied later: a request can land
// after its caller gave up on it. Versions are opaque, so the only
// evidence is what a fresh read shows. Update reads the key again and
// decides:
//
//   - The key exists at exactly the version the write was conditioned on:
//     the write has not applied (a key never gets an old version back).
//     Update sends the same conditional write again, as a retry of a
//     transient failure (Options.TransientBudget). At most one of the
//     sends can apply, since they carry the same condition.
//   - The key holds exactly the bytes Update wrote, under a version it did
//     not have, and Options.UniqueValues is set: the write was applied;
//     Update returns Written with that version.
//   - Anything else: Update cannot tell, and returns an error matching
//     store.ErrUnknownOutcome; the caller must decide (re-run an idempotent
//     update, or inspect the key). That includes a create (IfAbsent) whose
//     key is absent again: a create that applied and was deleted since
//     looks the same, and creating it again would undo that delete.
//
// A resend that loses its race proves nothing either: the earlier send
// may have landed late, just before it. Update then never calls fn again
// (fn would run on a state that already holds its change, and one
// increment would become two) and never reports ErrContended. It re-reads
// once more and decides as above: Written when UniqueValues is set and
// the key holds the bytes it sent, otherwise store.ErrUnknownOutcome.
//
// Why not treat "the bytes we wrote are there" as applied by default: two
// writers that read the same state may compute the same bytes (two
// increments of 5 both write 6). Only one of them can have won, yet both
// would see 6 and both would report success: a lost update. UniqueValues
// is the caller's promise that this cannot happen. A delete leaves no
// bytes to recognise, so an unknown-outcome delete is resolved only when
// the key is unchanged and a resend then succeeds.
//
// After Update returns store.ErrUnknownOutcome the write may still land;
// keep writes that must not repeat recognisable (UniqueValues) or
// idempotent, so that a caller who re-runs the Update can tell.
func Update(ctx context.Context, s store.Store, key string, fn Func, opts *Options) (Result, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return Result{}, fmt.Errorf("cas: update %q: %w", key, err)
	}
	u := &updater{s: s, key: key, fn: fn, o: o, caps: s.Capabilities(), start: now()}
	if !u.caps.CreateIfAbsent || !u.caps.CompareAndSwap {
		return Result{}, u.errorf("%w: the store does not declare create-if-absent and compare-and-swap", store.ErrUnsupported)
	}
	err = u.run(ctx)
	return u.res, err
}

// state is a key as one read saw it.
type state struct {
	entry  store.Entry
	exists bool
}

type updater struct {
	s     store.Store
	key   string
	fn    Func
	o     Options
	caps  store.Capabilities
	start time.Time

	res        Result
	conflicts  int
	transients int
	// firstTransient is when the first transient failure came (zero
	// before one did): TransientBudget counts from it.
	firstTransient time.Time
	// unsure is set once a write of this Update has failed with
	// store.ErrUnknownOutcome: from then on that write may still apply,
	// so no later failure is proof that nothing was written.
	unsure bool

	// The conflict backoff (see Options.BaseDelay): attempt is how long
	// the last read and write that lost took; first is the ceiling before
	// the first retry, last the ceiling of the last conflict backoff drawn.
	attempt     time.Duration
	first, last time.Duration

	// The waiting line (line.go): w is nil until u takes a ticket;
	// unlined sends u on without a line.
	w       *waiting
	unlined bool
}

func (u *updater) errorf(format string, args ...any) error {
	return fmt.Errorf("cas: update %q: "+format, append([]any{u.key}, args...)...)
}

func (u *updater) run(ctx context.Context) error {
	defer u.leaveLine(ctx)
	if u.lineFirst() {
		if err := u.joinLine(ctx); err != nil {
			return u.stopped(err)
		}
	}
	for {
		if err := u.waitInLine(ctx); err != nil {
			return u.stopped(err)
		}
		done, err := u.inTurn(ctx)
		if errors.Is(err, errTimeout) {
			return u.stopped(err)
		}
		if done && err == nil && u.conflicts == 0 && u.w == nil {
			u.checkLine(ctx)
		}
		if done || !errors.Is(err, store.ErrConflict) {
			return u.unresolved(err)
		}
		u.conflicts++
		if u.conflicts >= u.o.MaxAttempts {
			return &ContendedError{Key: u.key, Attempts: u.res.Attempts}
		}
		if u.w == nil && u.conflicts >= lineAfter && u.lined() {
			if err := u.joinLine(ctx); err != nil {
				return u.stopped(err)
			}
		}
		d := u.conflictDelay()
		if u.w != nil && !u.unlined {
			d = u.lineDelay()
		}
		if err := u.pause(ctx, d); err != nil {
			return u.stopped(err)
		}
	}
}

// stopped returns the error that ends u when err (errTimeout, or ctx's
// cause) came while it waited.
func (u *updater) stopped(err error) error {
	if errors.Is(err, errTimeout) {
		return &ContendedError{Key: u.key, Attempts: u.res.Attempts, Deadline: true}
	}
	return err
}

// inTurn waits for the key's turn (turns.go) and makes one attempt in it,
// timing the attempt (u.attempt). It returns errTimeout when
// Options.Timeout passes while it waits.
func (u *updater) inTurn(ctx context.Context) (done bool, err error) {
	release, err := u.takeTurn(ctx)
	if errors.Is(err, errTimeout) {
		return false, err
	}
	if err != nil {
		return false, u.errorf("%w", err)
	}
	defer release() // also when fn panics
	began := now()
	defer func() { u.attempt = now().Sub(began) }()
	return u.try(ctx)
}

// try makes one attempt: it reads the key, calls fn and writes its
// Decision. It reports done when the Update is over (applied, aborted, or
// nothing to delete); otherwise err says why not, and matches
// store.ErrConflict when the write lost its race.
func (u *updater) try(ctx context.Context) (done bool, err error) {
	base, err := u.read(ctx)
	if err != nil {
		return false, err
	}
	u.res.Attempts++
	d, err := u.fn(base.entry.Value, base.exists)
	if err != nil {
		return false, u.errorf("%w", err)
	}
	switch {
	case d.op == opAbort:
		u.res = Result{Outcome: Aborted, Entry: base.entry, Exists: base.exists, Attempts: u.res.Attempts}
		return true, nil
	case d.op == opDelete && !base.exists:
		u.applied(d, "")
		return true, nil
	case d.op == opDelete && !u.caps.CompareAndDelete:
		return false, u.errorf("%w: the store does not declare compare-and-delete", store.ErrUnsupported)
	case d.op == 0:
		return false, u.errorf("the function returned the zero Decision")
	}
	if err := u.write(ctx, base, d); err != nil {
		return false, err
	}
	u.learn()
	return true, nil
}

// read returns the key's current state, absorbing transient failures.
func (u *updater) read(ctx context.Context) (state, error) {
	for {
		if err := ctx.Err(); err != nil {
			return state{}, u.errorf("%w", context.Cause(ctx))
		}
		e, err := u.s.Get(ctx, u.key)
		switch {
		case err == nil:
			return state{entry: e, exists: true}, nil
		case errors.Is(err, store.ErrNotFound):
			return state{entry: store.Entry{Key: u.key}}, nil
		case ctx.Err() == nil && (errors.Is(err, store.ErrTransient) || errors.Is(err, store.ErrUnknownOutcome)):
			// A read changes nothing, so an unknown outcome is just a failure.
			if err := u.transient(ctx, err); err != nil {
				return state{}, err
			}
		default:
			return state{}, u.errorf("%w", err)
		}
	}
}

// write applies d on top of base. It returns nil when applied, an error
// matching store.ErrConflict when the race was lost, and any other error
// when Update must stop.
func (u *updater) write(ctx context.Context, base state, d Decision) error {
	cond := store.IfAbsent
	if base.exists {
		cond = store.IfMatch(base.entry.Version)
	}
	for {
		if err := ctx.Err(); err != nil {
			return u.errorf("%w", context.Cause(ctx))
		}
		var v store.Version
		var err error
		if d.op == opDelete {
			err = u.s.Delete(ctx, u.key, cond)
		} else {
			v, err = u.s.Put(ctx, u.key, d.value, cond)
		}
		switch {
		case err == nil:
			u.applied(d, v)
			return nil
		case errors.Is(err, store.ErrConflict) && u.unsure:
			// The race may have been lost to our own earlier send.
			_, err := u.resolve(ctx, base, d, err)
			return err
		case errors.Is(err, store.ErrConflict):
			return err
		case errors.Is(err, store.ErrTransient):
			// Nothing happened; the same conditional write is still safe.
			if err := u.transient(ctx, err); err != nil {
				return err
			}
		case errors.Is(err, store.ErrUnknownOutcome):
			u.unsure = true
			done, err := u.resolve(ctx, base, d, err)
			if done || err != nil {
				return err
			}
		default:
			return u.errorf("%w", err)
		}
	}
}

// resolve re-reads the key after a write of unknown outcome (werr), or
// after a resend of one lost its race (werr matches store.ErrConflict),
// and applies the rule documented on Update. It reports done when the
// write was applied, an error when Update must stop, and neither when the
// write should be sent again.
//
// Update never calls fn again once a write's outcome is unknown, so every
// send whose outcome is unknown carried d: comparing the key with d's
// bytes compares it with every value this Update may have written.
func (u *updater) resolve(ctx context.Context, base state, d Decision, werr error) (done bool, err error) {
	lost := errors.Is(werr, store.ErrConflict)
	if lost {
		// Not ErrConflict for the caller: that would say nothing applied.
		werr = fmt.Errorf("a resend lost its race (%v), perhaps to the earlier send: %w", werr, store.ErrUnknownOutcome)
	}
	if ctx.Err() != nil {
		return false, u.errorf("%w", werr)
	}
	now, err := u.read(ctx)
	if err != nil {
		return false, u.errorf("%w; re-reading to resolve it: %w", werr, err)
	}
	unchanged := now.exists == base.exists && now.entry.Version == base.entry.Version
	switch {
	case !lost && unchanged && base.exists:
		// The version the write was conditioned on is still there, and a
		// key never gets an old version back: not applied (yet).
		return false, u.transient(ctx, werr)
	case !unchanged && d.op == opSet && u.o.UniqueValues && now.exists && bytes.Equal(now.entry.Value, d.value):
		u.applied(d, now.entry.Version)
		return true, nil
	}
	u.res.Entry, u.res.Exists = now.entry, now.exists
	switch {
	case lost:
		return false, u.errorf("whether this write applied cannot be told: %w", werr)
	case unchanged:
		return false, u.errorf("the key is absent, as before, but a create that applied and was deleted since would look the same, so whether this write applied cannot be told: %w", werr)
	}
	return false, u.errorf("the key changed since, so whether this write applied cannot be told: %w", werr)
}

// unresolved returns err, which ends the Update, made to match
// store.ErrUnknownOutcome when an earlier write's outcome is unknown: that
// write may still apply, so the caller must not take err as proof that
// nothing was written.
func (u *updater) unresolved(err error) error {
	if err == nil || !u.unsure || errors.Is(err, store.ErrUnknownOutcome) {
		return err
	}
	return fmt.Errorf("%w (after a write of unknown outcome: %w)", err, store.ErrUnknownOutcome)
}

// applied records d as done, with v the new version of a Set.
func (u *updater) applied(d Decision, v store.Version) {
	if d.op == opDelete {
		u.res.Outcome, u.res.Entry, u.res.Exists = Deleted, store.Entry{Key: u.key}, false
		return
	}
	u.res.Outcome, u.res.Exists = Written, true
	u.res.Entry = store.Entry{Key: u.key, Value: d.value, Version: v}
}

// transient records one failure (err) that may be retried as it is and
// backs off. It returns an error, saying how many failures came over how
// long, when the backoff would end past the deadline (transientEnd), and
// ctx's cause when ctx ends during it.
func (u *updater) transient(ctx context.Context, err error) error {
	u.transients++
	t := now()
	if u.transients == 1 {
		u.firstTransient = t
	}
	end, why := u.transientEnd(ctx)
	d := u.o.policy().Delay(u.transients)
	if !t.Add(d).Before(end) {
		return u.errorf("gave up after %d transient failures over %v (%s): %w",
			u.transients, t.Sub(u.start).Round(time.Millisecond), why, err)
	}
	if backoff.Sleep(ctx, d) != nil {
		return u.errorf("%w (after %d transient failures, the last: %v)", context.Cause(ctx), u.transients, err)
	}
	return nil
}

// transientEnd is when retries of transient failures stop, and why: the
// earlier of Options.Timeout's end and ctx's deadline, or without either
// TransientBudget after the first transient failure.
func (u *updater) transientEnd(ctx context.Context) (time.Time, string) {
	end, why := u.deadline(), "Options.Timeout"
	if dl, ok := ctx.Deadline(); ok && (end.IsZero() || dl.Before(end)) {
		end, why = dl, "ctx's deadline"
	}
	if end.IsZero() {
		end, why = u.firstTransient.Add(u.o.TransientBudget), "Options.TransientBudget"
	}
	return end, why
}

var errTimeout = errors.New("cas: timeout")

// conflictDelay draws the backoff after the u.conflicts-th lost race:
// full jitter under a ceiling that starts at firstCeiling and doubles with
// every lost race, up to MaxDelay.
func (u *updater) conflictDelay() time.Duration {
	if u.conflicts == 1 {
		u.first = firstCeiling(u.o, u.attempt, recalled(u.s, u.key, now()))
	}
	p := backoff.Policy{Base: u.first, Max: u.o.MaxDelay}
	u.last = p.Ceiling(u.conflicts)
	return p.Delay(u.conflicts)
}

// firstCeiling is the ceiling of the backoff after an Update's first lost
// race: the largest of o.BaseDelay, the duration of the attempt that lost
// (a round trip of this store, under this load) and the ceiling recalled
// from the contention memory, at most o.MaxDelay.
func firstCeiling(o Options, attempt, recall time.Duration) time.Duration {
	return min(max(o.BaseDelay, attempt, recall), o.MaxDelay)
}

// learn updates the contention memory after a write of this Update
// applied after lost races: it leaves half the ceiling it won under, so
// that the next contended Update of the key starts one step below where
// this one ended (a win at the first retry halves the memory, a win at the
// second keeps it, a later one raises it). A ceiling at or under BaseDelay
// is forgotten: the backoff starts there anyway. An Update that won at
// once leaves the memory as it is: under contention the writer that has
// just won reads first and often wins again at once, which says nothing
// about how many others are waiting; quiet keys forget by expiry.
func (u *updater) learn() {
	if u.conflicts == 0 {
		return
	}
	c := u.last / 2
	if c <= u.o.BaseDelay {
		c = 0
	}
	remember(u.s, u.key, c, now())
}

// pause sleeps d, a backoff. It returns errTimeout, without sleeping, when
// the sleep would end past Options.Timeout, and ctx's cause when ctx ends
// first.
func (u *updater) pause(ctx context.Context, d time.Duration) error {
	if u.o.Timeout > 0 && now().Sub(u.start)+d >= u.o.Timeout {
		return errTimeout
	}
	if backoff.Sleep(ctx, d) != nil {
		return u.errorf("%w", context.Cause(ctx))
	}
	return nil
}
