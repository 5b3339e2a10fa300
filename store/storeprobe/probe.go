// Package storeprobe checks a live store against the guarantees its backend
// declares. Capabilities are declared, not assumed, and the worst failure of
// a store is to accept a condition and silently ignore it (an S3-compatible
// server that drops If-None-Match, an emulator that ignores delete
// preconditions): every caller that asked Capabilities first still loses
// updates. Run exercises each declared capability for real, under a fresh key
// prefix, and reports for each check whether it was verified, whether the
// store broke the guarantee it declared, or whether the capability is not
// declared (and then whether the store refuses the operation with
// ErrUnsupported, as it should).
//
// Run promises:
//
//   - it writes only under Options.Prefix, which must hold no key when Run
//     starts, and deletes every key it wrote before it returns (best
//     effort; Report.Leftovers names what stayed);
//   - every store call is bounded by Options.OpTimeout and the whole run by
//     Options.Timeout; cleanup gets its own bound after that;
//   - a failing check never stops the others: each check works on keys of
//     its own.
//
// It imports only package store, internal/backoff and the standard
// library, so it can probe any backend.
package storeprobe

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
)

// Status is the outcome of one check.
type Status string

// The outcomes.
const (
	// Pass: the store did what its declaration promises.
	Pass Status = "PASS"
	// Fail: the store broke a declared guarantee (Result.Broken), or an
	// operation failed unexpectedly (a timeout, a wrong error).
	Fail Status = "FAIL"
	// Skip: the capability is not declared, so nothing relies on it.
	Skip Status = "SKIP"
)

// Capability names, as Result.Capability reports them. Checks of the basic
// contract every store must keep have Capability "".
const (
	CapCreateIfAbsent   = "create-if-absent"
	CapCompareAndSwap   = "compare-and-swap"
	CapCompareAndDelete = "compare-and-delete"
	CapTransactions     = "transactions"
	CapWatch            = "watch"
	CapStreaming        = "streaming"
	CapUniqueVersions   = "unique-versions"
)

// Result is the outcome of one check.
type Result struct {
	// Check names what was checked, like a conformance subtest:
	// "cas/stale version returns ErrConflict and keeps the value".
	Check string `json:"check"`
	// Capability is the declared capability the check verifies, or "" for
	// the basic contract.
	Capability string `json:"capability,omitempty"`
	// Declared says whether the store declares Capability (always true
	// for the basic contract).
	Declared bool   `json:"declared"`
	Status   Status `json:"status"`
	// Broken is set on a Fail where the store accepted an operation its
	// declaration says it must refuse, or lost or kept data it must not:
	// the dangerous case. A Fail without Broken is an operation that
	// failed unexpectedly (a timeout, a transport error, a wrong error
	// kind).
	Broken bool `json:"broken"`
	// Detail says what happened, for people.
	Detail string `json:"detail,omitempty"`
	// Latency is the wall time of the whole check.
	Latency time.Duration `json:"latency_ns"`
}

// Report is the outcome of a run.
type Report struct {
	Prefix       string             `json:"prefix"`
	Capabilities store.Capabilities `json:"capabilities"`
	Results      []Result           `json:"results"`
	// Leftovers are the keys under Prefix that cleanup could not remove.
	Leftovers []string `json:"leftovers"`
}

// OK reports whether every check passed or was skipped: everything the
// store declares is verified and every key was cleaned up.
func (r *Report) OK() bool { return len(r.Failed()) == 0 }

// Failed returns the results with Status Fail.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == Fail {
			out = append(out, res)
		}
	}
	return out
}

// Defaults used where Options leaves a field zero.
const (
	DefaultOpTimeout      = 10 * time.Second
	DefaultTimeout        = 2 * time.Minute
	DefaultCleanupTimeout = 30 * time.Second
	DefaultRacers         = 8
	DefaultWatchTimeout   = 5 * time.Second
)

// Options tune a run. A nil *Options and every zero field mean the
// defaults; negative values are an error.
type Options struct {
	// Prefix is where the probe writes; it must hold no key. Default
	// DefaultPrefix(): "latchkey-probe/<16 random hex digits>". A
	// trailing '/' is dropped.
	Prefix string
	// OpTimeout bounds each store call. Default DefaultOpTimeout.
	OpTimeout time.Duration
	// Timeout bounds the checks as a whole (cleanup runs after it, bounded
	// by CleanupTimeout). Default DefaultTimeout.
	Timeout time.Duration
	// CleanupTimeout bounds the removal of the probe's keys. Default
	// DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// Racers is the number of concurrent writers of the race checks, 2 to
	// 256. Default DefaultRacers.
	Racers int
	// WatchTimeout bounds how long WaitChange may take to wake after a
	// write. Default DefaultWatchTimeout.
	WatchTimeout time.Duration
	// Checks, when not empty, runs only the checks of these names
	// (Check.Name, as Checks lists them), in Run's order; cleanup runs
	// as always. A name that is not a check is an error. Default: every
	// check.
	Checks []string
}

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// the defaults, or an error naming the first field out of its range.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Prefix == "" {
		r.Prefix = DefaultPrefix()
	}
	r.Prefix = strings.TrimSuffix(r.Prefix, "/")
	if err := store.ValidateKey(r.Prefix); err != nil {
		return r, fmt.Errorf("storeprobe: prefix: %w", err)
	}
	if err := optcheck.NonNegative(
		optcheck.Named("OpTimeout", r.OpTimeout), optcheck.Named("Timeout", r.Timeout),
		optcheck.Named("CleanupTimeout", r.CleanupTimeout), optcheck.Named("WatchTimeout", r.WatchTimeout),
		optcheck.Named("Racers", r.Racers),
	); err != nil {
		return r, fmt.Errorf("storeprobe: %w", err)
	}
	if r.Racers == 1 || r.Racers > 256 {
		return r, fmt.Errorf("storeprobe: Options.Racers %d: want 2 to 256 (0 for the default)", r.Racers)
	}
	r.OpTimeout = cmp.Or(r.OpTimeout, DefaultOpTimeout)
	r.Timeout = cmp.Or(r.Timeout, DefaultTimeout)
	r.CleanupTimeout = cmp.Or(r.CleanupTimeout, DefaultCleanupTimeout)
	r.WatchTimeout = cmp.Or(r.WatchTimeout, DefaultWatchTimeout)
	r.Racers = cmp.Or(r.Racers, DefaultRacers)
	for _, name := range r.Checks {
		if !slices.ContainsFunc(Checks(), func(c Check) bool { return c.Name == name }) {
			return r, fmt.Errorf("storeprobe: no check named %q", name)
		}
	}
	return r, nil
}

// selected reports whether the check named name is to run.
func (o *Options) selected(name string) bool {
	return len(o.Checks) == 0 || slices.Contains(o.Checks, name)
}

// DefaultPrefix returns a fresh "latchkey-probe/<16 random hex digits>".
func DefaultPrefix() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "latchkey-probe/" + hex.EncodeToString(b)
}

// ErrPrefixInUse is returned by Run when the prefix already holds keys: the
// probe writes and deletes there, so it must be fresh.
var ErrPrefixInUse = errors.New("storeprobe: prefix already holds keys")

// Run probes s and returns one Result per check. It returns an error, and
// no report, only when it cannot start: bad options, a prefix that holds
// keys (ErrPrefixInUse), or a store that cannot list it.
func Run(ctx context.Context, s store.Store, opts *Options) (*Report, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &prober{s: s, caps: s.Capabilities(), opts: o, written: map[string]bool{}}
	if err := p.checkFresh(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Prefix: o.Prefix, Capabilities: p.caps}
	runCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	for _, c := range Checks() {
		if o.selected(c.Name) {
			rep.Results = append(rep.Results, p.run(runCtx, c)...)
		}
	}
	cancel()
	rep.Results = append(rep.Results, p.cleanup(ctx, rep))
	return rep, nil
}

// prober holds the state of one run.
type prober struct {
	s    store.Store
	caps store.Capabilities
	opts Options

	mu      sync.Mutex
	written map[string]bool // every key a Put may have created
	refused map[string]bool // capabilities whose refusal was already reported
}

func (p *prober) checkFresh(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	page, err := p.s.List(octx, p.opts.Prefix+"/", &store.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("storeprobe: list %q: %w", p.opts.Prefix+"/", err)
	}
	if len(page.Items) > 0 {
		return fmt.Errorf("%w: %q holds %q; give a fresh prefix", ErrPrefixInUse, p.opts.Prefix, page.Items[0].Key)
	}
	return nil
}

// key returns the probe key prefix/parts... and remembers it for cleanup.
func (p *prober) key(parts ...string) string {
	k := p.opts.Prefix + "/" + strings.Join(parts, "/")
	p.mu.Lock()
	p.written[k] = true
	p.mu.Unlock()
	return k
}

// run runs one check, or reports why it does not apply.
func (p *prober) run(ctx context.Context, c Check) []Result {
	res := Result{Check: c.Name, Capability: c.Capability, Declared: c.Declared(p.caps)}
	if !res.Declared {
		p.mu.Lock()
		first := p.refused == nil || !p.refused[c.Capability]
		if p.refused == nil {
			p.refused = map[string]bool{}
		}
		p.refused[c.Capability] = true
		p.mu.Unlock()
		if !first {
			return nil // one row per undeclared capability
		}
		res.Check = c.Capability + "/not declared"
		res.Status = Skip
		start := time.Now()
		res.Detail = "not declared"
		if ctx.Err() == nil {
			res.Detail = p.refusal(ctx, c.Capability)
		}
		res.Latency = time.Since(start)
		return []Result{res}
	}
	if err := ctx.Err(); err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("not run: the probe's time limit (%v) passed", p.opts.Timeout)
		return []Result{res}
	}
	start := time.Now()
	detail, err := c.run(ctx, p)
	res.Latency = time.Since(start)
	res.Status, res.Detail = Pass, detail
	if err != nil {
		res.Status, res.Detail = Fail, err.Error()
		var b *brokenError
		res.Broken = errors.As(err, &b)
	}
	return []Result{res}
}

// brokenError is a check's finding that the store broke a guarantee.
type brokenError struct{ msg string }

func (e *brokenError) Error() string { return "BROKEN: " + e.msg }

func broken(format string, args ...any) error {
	return &brokenError{msg: fmt.Sprintf(format, args...)}
}

// unexpected reports an operation that failed for another reason than the
// one the check tests.
func unexpected(what string, err error) error {
	return fmt.Errorf("%s: unexpected error: %w", what, err)
}

// cleanup deletes every key the probe may have written, then lists the
// prefix for anything left.
func (p *prober) cleanup(parent context.Context, rep *Report) Result {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), p.opts.CleanupTimeout)
	defer cancel()
	start := time.Now()
	res := Result{Check: "cleanup/every probe key removed", Declared: true}
	p.mu.Lock()
	keys := make([]string, 0, len(p.written))
	for k := range p.written {
		keys = append(keys, k)
	}
	p.mu.Unlock()
	var errs []error
	for _, k := range keys {
		if err := p.delRetry(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	left := map[string]bool{}
	for it, err := range store.All(ctx, p.s, p.opts.Prefix+"/") {
		if err != nil {
			errs = append(errs, fmt.Errorf("list leftovers: %w", err))
			break
		}
		left[it.Key] = true
	}
	for k := range left {
		rep.Leftovers = append(rep.Leftovers, k)
	}
	slices.Sort(rep.Leftovers)
	res.Latency = time.Since(start)
	switch {
	case len(rep.Leftovers) > 0:
		res.Status, res.Detail = Fail, fmt.Sprintf("%d key(s) left behind: %s", len(rep.Leftovers), strings.Join(rep.Leftovers, ", "))
	case len(errs) > 0:
		res.Status, res.Detail = Fail, errors.Join(errs...).Error()
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("%d key(s) deleted", len(keys))
	}
	return res
}

// cleanupAttempts bounds the tries of each cleanup delete.
const cleanupAttempts = 3

// cleanupBackoff spaces those tries: 50ms, then 100ms, each drawn over
// its upper half.
var cleanupBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: 50 * time.Millisecond << (cleanupAttempts - 2)}

// delRetry deletes key unconditionally, retrying an error that says the
// delete did not happen or may not have (a delete is idempotent) after a
// short jittered backoff.
func (p *prober) delRetry(ctx context.Context, key string) error {
	for attempt := 1; ; attempt++ {
		err := p.del(ctx, key, store.Unconditional)
		retryable := errors.Is(err, store.ErrTransient) || errors.Is(err, store.ErrUnknownOutcome)
		if err == nil || !retryable || attempt == cleanupAttempts {
			return err
		}
		if backoff.Sleep(ctx, cleanupBackoff.EqualDelay(attempt)) != nil {
			return err
		}
	}
}
