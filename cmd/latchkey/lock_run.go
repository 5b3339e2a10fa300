package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/cmd/internal/bench"
	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

// lockRunConfig is lock run's command line.
type lockRunConfig struct {
	store         string
	key           string
	argv          []string
	ttl, grace    time.Duration
	wait          time.Duration // < 0: no limit
	holder        string
	childExitCode bool
	conflictCode  int // exit code when another holder has the lock
	quiet         bool
	noQueue       bool
	pollBudget    float64 // 0: the store's default (pollBudgetFor)
}

func parseLockRun(e *env, args []string) (*lockRunConfig, error) {
	f := newLockFlags(e, "run")
	c := &lockRunConfig{store: "", wait: -1}
	f.DurationVar(&c.ttl, "ttl", lease.DefaultTTL, "lease `TTL`: how long the lock survives lock run dying or losing the store")
	f.Func("wait", "give up acquiring after `D` (default: wait as long as it takes; 0: try once)", func(s string) error {
		d, err := time.ParseDuration(s)
		if err == nil && d < 0 {
			err = errors.New("negative")
		}
		c.wait = d
		return err
	})
	f.DurationVar(&c.grace, "grace", 0, "when the lock is lost, time from SIGTERM to SIGKILL of CMD (default TTL/5; less than 40% of TTL)")
	f.StringVar(&c.holder, "holder", "", "holder `NAME` written in the lock (default HOST:PID)")
	f.BoolVar(&c.childExitCode, "child-exit-code", false, "exit with CMD's own exit code")
	f.IntVar(&c.conflictCode, "conflict-exit-code", exitConflict, "exit `CODE` when the lock was not acquired because another holder has it (as flock -E)")
	f.BoolVar(&c.quiet, "quiet", false, "say nothing on stderr while waiting for the lock")
	f.BoolVar(&c.noQueue, "no-queue", false, "do not queue: poll the lock like every other waiter, first come at the release first served")
	f.Func("poll-budget", "the queued waiters of the lock, all processes together, make at most `RATE` requests per second while it is held (default 4; 2 on gs://)", func(s string) error {
		r, err := strconv.ParseFloat(s, 64)
		if err == nil && !(r > 0) {
			err = errors.New("must be a positive number")
		}
		c.pollBudget = r
		return err
	})
	if err := f.parse(args); err != nil {
		return nil, err
	}
	c.store = *f.store
	rest := f.Args()
	if len(rest) < 3 || rest[1] != "--" {
		return nil, usagef("lock run: usage: latchkey lock run [flags] KEY -- CMD [ARGS...]")
	}
	c.key, c.argv = rest[0], rest[2:]
	if c.conflictCode < 1 || c.conflictCode > 255 {
		return nil, usagef("lock run: --conflict-exit-code %d: want 1 to 255, e.g. --conflict-exit-code 75", c.conflictCode)
	}
	if c.grace == 0 {
		c.grace = c.ttl / 5
	}
	if c.grace < 0 || c.grace+c.ttl/10 >= c.ttl/2 {
		return nil, usagef("lock run: --grace %v must be positive and less than 40%% of --ttl %v: CMD must be dead before the lock can be taken over", c.grace, c.ttl)
	}
	if err := c.options().Validate(); err != nil {
		return nil, usagef("lock run: %v", err)
	}
	return c, nil
}

// options are the lease options: margin = grace + TTL/10, so CMD is killed
// at the latest TTL/10 before a contender could take over.
func (c *lockRunConfig) options() *lease.Options {
	return &lease.Options{Holder: c.holder, TTL: c.ttl, Margin: c.grace + c.ttl/10, NoQueue: c.noQueue, PollBudget: c.pollBudget}
}

// queueDefaults fills in the queue settings the store's service asks for
// where the command line left them: GCS takes about one write per second
// per object, so waiters there spend less and back off their queue writes
// by a second; S3 and Azure serve a few requests per second per key
// comfortably, and the package default (lease.DefaultPollBudget) fits.
func queueDefaults(o *lease.Options, storeURL string) {
	if strings.HasPrefix(storeURL, "gs://") {
		if o.PollBudget == 0 {
			o.PollBudget = 2
		}
		o.QueueRetryDelay = time.Second
	}
}

func runLockRun(ctx context.Context, e *env, args []string) error {
	c, err := parseLockRun(e, args)
	if err != nil {
		return err
	}
	// Signals are forwarded to CMD; register before acquiring so none is
	// lost between the acquisition and the child's start.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	s, err := openStore(ctx, e, c.store)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		line, cause := plainMessage(err, err.Error())
		return &exitError{code: exitUnavailable, msg: line, cause: cause}
	}
	if err != nil {
		return err
	}
	w := &waitReporter{e: e, key: c.key, quiet: c.quiet, wait: c.wait}
	streak := &streakStore{Store: s, onStart: w.storeFailing, onEnd: w.storeAnswered}
	s = bench.Instrument(e.getenv, streak)
	defer s.Close()
	opts := c.options()
	opts.Waiting = w.report
	if u, err := storeURL(e, c.store); err == nil {
		queueDefaults(opts, u)
	}
	lk, err := lease.NewLocker(s, c.key, opts)
	if err != nil {
		return failf("lock run: %v", err)
	}
	l, err := acquireForRun(ctx, lk, c.wait, w)
	if err != nil {
		line, cause := plainMessageTried(err, heldSaid("lock run: "+err.Error(), err), streak.account(), streak.lastAnswer())
		return &exitError{code: notAcquiredCode(ctx, err, c.conflictCode, w.sawHolder), msg: line, cause: cause}
	}
	w.done()
	if l.Recreated() {
		fmt.Fprintf(e.stderr, "latchkey: lock run: warning: the lock record at %q had been deleted by hand; its tokens continue above the deleted ones (token %d)\n", c.key, l.Token())
	}
	l.KeepAlive()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl)
		defer cancel()
		if err := l.Release(rctx); err != nil && !errors.Is(err, lease.ErrLost) {
			fmt.Fprintf(e.stderr, "latchkey: lock run: releasing %q: %v (it expires after its TTL)\n", c.key, err)
		}
	}()

	ch, err := startChild(e, c.argv, l.Token())
	if err != nil {
		return failf("lock run: starting %s: %v", c.argv[0], err)
	}
	return superviseChild(ctx, e, c, l, ch, sigs)
}

// acquireForRun acquires with lock run's --wait rule. A record that
// looks stale (its holder crashed) is confirmed unchanged for up to a TTL
// and a poll, and then taken over, even with --wait 0.
func acquireForRun(ctx context.Context, lk *lease.Locker, wait time.Duration, w *waitReporter) (*lease.Lease, error) {
	if wait < 0 {
		return lk.Acquire(ctx)
	}
	var l *lease.Lease
	var err error
	if wait == 0 {
		// Lost races are retried at once, as Acquire retries them.
		for i := 0; ; i++ {
			l, err = lk.TryAcquire(ctx)
			if !errors.Is(err, lease.ErrLostRace) || i == lease.QuickRetries {
				break
			}
		}
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		l, err = lk.Acquire(wctx)
		cancel()
	}
	var held *lease.HeldError
	if err != nil && ctx.Err() == nil && errors.As(err, &held) && held.Stale {
		w.stale(held)
		if l, err := lk.ConfirmStale(ctx, held); err == nil || !errors.As(err, &held) {
			return l, err
		}
	}
	if err != nil && wait > 0 && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		if errors.As(err, &held) {
			return nil, fmt.Errorf("not acquired within --wait %v: %w", wait, held)
		}
		return nil, fmt.Errorf("not acquired within --wait %v: %w", wait, err)
	}
	if err != nil && errors.As(err, &held) && wait == 0 {
		return nil, held
	}
	return l, err
}

// notAcquiredCode is lock run's exit code when the lock was not acquired
// with err: conflict when another holder has it (or waiters queued before
// us kept it until --wait ran out), exitUnavailable when the store could
// not be reached or refused (or --wait ran out with no holder seen: the
// store did not answer in time), exitFail otherwise (interrupted, say).
func notAcquiredCode(ctx context.Context, err error, conflict int, sawHolder bool) int {
	var held *lease.HeldError
	var queued *lease.QueuedError
	var oe *store.OpError
	switch {
	case ctx.Err() != nil:
		return exitFail
	case errors.As(err, &held), errors.As(err, &queued):
		return conflict
	case errors.As(err, &oe), errors.Is(err, store.ErrTransient), errors.Is(err, store.ErrUnknownOutcome),
		errors.Is(err, store.ErrUnsupported), errors.Is(err, store.ErrClosed):
		return exitUnavailable
	case errors.Is(err, context.DeadlineExceeded) && sawHolder:
		return conflict // --wait ran out while others held or queued
	case errors.Is(err, context.DeadlineExceeded):
		return exitUnavailable
	}
	return exitFail
}

// waitReporter tells the user, on stderr, whom a waiting lock run waits
// for: once, and again when that changes (unless --quiet). A streak of
// store failures (see streakStore) is one line when it starts (what
// failed, that it is retried until when) and one when the store answers
// again (after N tries over D); if it never does, lock run's last line
// says so.
type waitReporter struct {
	e     *env
	key   string
	quiet bool
	wait  time.Duration // --wait; < 0 none

	mu       sync.Mutex // the store's callbacks come from lease's goroutines
	last     string
	acquired bool // nothing more to say
	// sawHolder: the last wait was for a holder or waiters ahead, not
	// for the store.
	sawHolder bool
}

func (w *waitReporter) say(msg string) { w.sayAs(msg, msg) }

// sayAs prints msg unless the last line printed was of the same kind: a
// state seen again, or a store failure again.
func (w *waitReporter) sayAs(kind, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.quiet || w.acquired || kind == w.last {
		return
	}
	w.last = kind
	fmt.Fprintf(w.e.stderr, "latchkey: lock run: %s\n", msg)
}

// report is lease.Options.Waiting.
func (w *waitReporter) report(err error) {
	var held *lease.HeldError
	var queued *lease.QueuedError
	// A queue with nobody ahead and no holder is no evidence of one.
	w.mu.Lock()
	w.sawHolder = errors.As(err, &held) || errors.As(err, &queued) && (queued.Held != nil || queued.Ahead > 0)
	w.mu.Unlock()
	switch {
	case errors.As(err, &queued) && queued.Held == nil:
		w.say(fmt.Sprintf("waiting for %s: free, but %d waiter(s) queued before us", w.key, queued.Ahead))
	case errors.As(err, &queued):
		w.say(fmt.Sprintf("waiting for %s: held by %s (token %d); %d waiter(s) queued before us", w.key, queued.Held.Holder, queued.Held.Token, queued.Ahead))
	case errors.As(err, &held) && held.Forced:
		w.say(fmt.Sprintf("waiting for %s: released by force by %s (token %d); free once its holder's TTL has passed", w.key, held.Holder, held.Token))
	case errors.As(err, &held):
		w.say(fmt.Sprintf("waiting for %s: held by %s (token %d)", w.key, held.Holder, held.Token))
	default:
		w.storeFailing(err)
	}
}

// storeFailing says, once per streak, that the store fails and that lock
// run retries.
func (w *waitReporter) storeFailing(err error) {
	until := "retrying until --wait " + w.wait.String() + " runs out"
	if w.wait < 0 {
		until = "retrying until it answers (Ctrl-C to stop)"
	}
	what := "store failing"
	var oe *store.OpError
	if errors.As(err, &oe) && troubleOf(oe).what != "" {
		what = troubleOf(oe).brief()
	}
	w.sayAs("store failure", fmt.Sprintf("waiting for %s: %s; %s", w.key, what, until))
}

// storeAnswered ends a streak of store failures that was announced.
func (w *waitReporter) storeAnswered(n int, over time.Duration) {
	w.mu.Lock()
	announced := w.last == "store failure"
	w.mu.Unlock()
	if announced {
		w.sayAs("store answered", "store answered again"+tries(n, over))
	}
}

// done silences the reporter once the lock is acquired: renewals have
// their own account (a lost lock).
func (w *waitReporter) done() {
	w.mu.Lock()
	w.acquired = true
	w.mu.Unlock()
}

// heldSaid is msg, the message of err, with a holder's lease error said
// from its record: when it was last renewed, on the holder's clock, the
// same on every call, rather than the lease's own estimate of its expiry
// (the time this contender first saw the record plus a TTL), which moves
// with every call. lock show says when it may be taken over.
func heldSaid(msg string, err error) string {
	var held *lease.HeldError
	var queued *lease.QueuedError
	if !errors.As(err, &held) || errors.As(err, &queued) {
		return msg
	}
	words := fmt.Sprintf("%q held by %q (token %d), last renewed %s by its clock; latchkey lock show %s tells when it may be taken over",
		held.Key, held.Holder, held.Token, held.Renewed.Format(time.RFC3339Nano), held.Key)
	if held.Forced {
		words = fmt.Sprintf("%q released by force by %q (token %d); free once unchanged for its TTL", held.Key, held.Holder, held.Token)
	}
	return strings.Replace(msg, held.Error(), words, 1)
}

// stale announces the confirmation of a stale-looking record.
func (w *waitReporter) stale(held *lease.HeldError) {
	w.say(fmt.Sprintf("%s: held by %s (token %d), last renewed %v ago by its clock: looks stale; confirming for %v",
		w.key, held.Holder, held.Token, time.Since(held.Renewed).Round(time.Second), time.Until(held.Until).Round(time.Millisecond)))
}

// superviseChild waits for the child, forwarding signals, and kills it if
// the lease is lost.
func superviseChild(ctx context.Context, e *env, c *lockRunConfig, l *lease.Lease, ch *child, sigs <-chan os.Signal) error {
	ctxDone := ctx.Done()
	forwarded := false
	for {
		select {
		case <-ch.exited:
			// Whatever CMD left running in its group dies with it,
			// before the lock is released.
			ch.finish()
			return childResult(c, ch)
		case s := <-sigs:
			ch.signal(s.(syscall.Signal))
			forwarded = true
		case <-ctxDone:
			// main cancels ctx on SIGINT/SIGTERM, which sigs delivers too:
			// forward that signal once; a cancellation without a signal
			// becomes SIGTERM.
			ctxDone = nil
			if forwarded {
				continue
			}
			select {
			case s := <-sigs:
				ch.signal(s.(syscall.Signal))
			case <-time.After(100 * time.Millisecond):
				ch.signal(syscall.SIGTERM)
			}
			forwarded = true
		case <-l.Done():
			return killLost(e, c, ch)
		}
	}
}

// killLost ends the child after the lease was lost: SIGTERM to its process
// group, and SIGKILL to the whole group after the grace period, whether or
// not the leader has exited by then: a process it started may ignore
// SIGTERM.
func killLost(e *env, c *lockRunConfig, ch *child) error {
	fmt.Fprintf(e.stderr, "latchkey: lock run: lock %q lost; sending SIGTERM to %s, SIGKILL in %v\n", c.key, c.argv[0], c.grace)
	ch.signal(syscall.SIGTERM)
	t := time.NewTimer(c.grace)
	defer t.Stop()
	<-t.C
	ch.signal(syscall.SIGKILL)
	ch.finish()
	return failf("lock run: lock %q lost while %s ran; it was terminated", c.key, c.argv[0])
}

// childResult turns the child's exit into lock run's.
func childResult(c *lockRunConfig, ch *child) error {
	code, desc := ch.result()
	if code == 0 {
		return nil
	}
	if c.childExitCode {
		return &exitError{code: code}
	}
	return failf("lock run: %s %s", c.argv[0], desc)
}

// childEnv is CMD's environment: ours plus the lock's.
func childEnv(e *env, token uint64) []string {
	return append(e.environ(), "LATCHKEY_LOCK_HELD=1", "LATCHKEY_FENCING_TOKEN="+strconv.FormatUint(token, 10))
}

// supervisorArg, as latchkey's first argument, makes it the supervisor of
// one lock run CMD (see runSupervisor), not a command anyone types.
const supervisorArg = "__lock-run-supervisor"
