package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

func runLock(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		io.WriteString(e.stderr, lockUsage)
		return &exitError{code: exitUsage}
	}
	switch args[0] {
	case "run":
		return runLockRun(ctx, e, args[1:])
	case "show":
		return runLockShow(ctx, e, args[1:])
	case "list":
		return runLockList(ctx, e, args[1:])
	case "release":
		return runLockRelease(ctx, e, args[1:])
	case "-h", "-help", "--help", "help":
		io.WriteString(e.stdout, lockUsage)
		return nil
	}
	return usagef("lock: unknown subcommand %q (see latchkey lock --help)", args[0])
}

// lockFlags is the flag set of one lock subcommand, with --store. Its -h
// prints the whole lock help, then the subcommand's flags.
type lockFlags struct {
	*cmdFlags
	name  string
	store *string
}

func newLockFlags(e *env, name string) *lockFlags {
	h := lockHelps[name]
	f := newHelpFlags(e, "lock "+name, "Usage: latchkey lock "+name+" "+h.synopsis+"\n\nFlags:\n")
	f.after = h.tail()
	return &lockFlags{cmdFlags: f, name: name, store: addStoreFlag(f.FlagSet)}
}

// key returns the one KEY argument, checked.
func (f *lockFlags) key() (string, error) {
	if f.NArg() != 1 {
		return "", usagef("lock %s: want exactly one KEY, got %d arguments (see latchkey lock --help)", f.name, f.NArg())
	}
	k := f.Arg(0)
	if err := store.ValidateKey(k); err != nil {
		return "", usagef("lock %s: %v", f.name, err)
	}
	return k, nil
}

// showRecord is what lock show --json and lock list --json print.
type showRecord struct {
	Key       string    `json:"key"`
	Holder    string    `json:"holder"`
	Token     uint64    `json:"token"`
	Released  bool      `json:"released"`
	Forced    bool      `json:"forced"`
	State     string    `json:"state"`
	TTLMillis int64     `json:"ttl_ms"`
	TTLNanos  int64     `json:"ttl_ns"`
	Acquired  time.Time `json:"acquired"`
	Renewed   time.Time `json:"renewed"`
	AgeMillis int64     `json:"renewed_age_ms"`
	// Expires is Renewed + TTL and StaleFrom Renewed + StaleAfter(TTL),
	// both on the writer's clock: fixed by the record, the same on every
	// call. Zero for a released or pending record.
	Expires   time.Time     `json:"expires,omitzero"`
	StaleFrom time.Time     `json:"stale_from,omitzero"`
	Version   store.Version `json:"version"`
	Queue     []showWaiter  `json:"queue"`
}

// showWaiter is one ticket of the lock's queue, as lock show and list
// print it.
type showWaiter struct {
	Position      int       `json:"position"` // 1: the next to get the lock
	Holder        string    `json:"holder"`
	Since         time.Time `json:"since"` // on the waiter's clock
	WaitingMillis int64     `json:"waiting_ms"`
}

// readQueue returns the lock's queue as lock show and list print it. A
// queue record that is not one is shown as empty: waiters replace it.
func readQueue(ctx context.Context, s store.Store, key string, now time.Time) ([]showWaiter, error) {
	q, err := lease.InspectQueue(ctx, s, key)
	if errors.Is(err, lease.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ws := []showWaiter{}
	for i, t := range q.Tickets {
		ws = append(ws, showWaiter{Position: i + 1, Holder: t.Holder, Since: t.Since, WaitingMillis: now.Sub(t.Since).Milliseconds()})
	}
	return ws, nil
}

// lockState names the state of a record, as lock show and list print it.
func lockState(rec lease.Record, now time.Time) string {
	switch {
	case rec.Pending:
		return "being created"
	case rec.Released:
		return "released"
	case rec.Forced:
		return "released by force"
	case now.Sub(rec.Renewed) > lease.StaleAfter(rec.TTL):
		return "looks stale"
	}
	return "held"
}

func newShowRecord(key string, rec lease.Record, v store.Version, now time.Time) showRecord {
	r := showRecord{Key: key, Holder: rec.Holder, Token: rec.Token, Released: rec.Released, Forced: rec.Forced,
		State: lockState(rec, now), TTLMillis: (rec.TTL + time.Millisecond - 1).Milliseconds(), TTLNanos: int64(rec.TTL),
		Acquired: rec.Acquired, Renewed: rec.Renewed, AgeMillis: now.Sub(rec.Renewed).Milliseconds(), Version: v}
	if !rec.Released && !rec.Pending {
		r.Expires, r.StaleFrom = rec.Renewed.Add(rec.TTL), rec.Renewed.Add(lease.StaleAfter(rec.TTL))
	}
	return r
}

// takeoverLines are lock show's lines on when the lock ends if its holder
// stops renewing, and when a taker may take it over: times computed from
// the record alone (its last renew plus its TTL), so that two calls on a
// dead holder print the same ones. A taker's own rule is relative: it
// takes the lock once it has seen the record unchanged for a TTL on its
// own clock.
func takeoverLines(b *strings.Builder, r showRecord, ttl time.Duration, now time.Time) {
	if r.Expires.IsZero() {
		return
	}
	if now.Before(r.Expires) {
		fmt.Fprintf(b, "expires:   %s (renewed + TTL, writer's clock) unless renewed\n", r.Expires.Format(time.RFC3339Nano))
	} else {
		fmt.Fprintf(b, "expired:   %s (renewed + TTL, writer's clock): not renewed since\n", r.Expires.Format(time.RFC3339Nano))
	}
	if r.Forced {
		fmt.Fprintf(b, "takeover:  once a waiter has seen this record unchanged for %v\n", ttl)
		return
	}
	fmt.Fprintf(b, "takeover:  once a waiter has seen this record unchanged for %v; by lock run --wait 0 from %s (renewed + 2 TTLs: stale) after confirming it for %v\n",
		ttl, r.StaleFrom.Format(time.RFC3339Nano), ttl)
}

// noLock is the message for a key without a lock record.
func noLock(cmd, key string, err error) error {
	if errors.Is(err, lease.ErrDeleted) {
		return failf("lock %s: no lock at %q: its record was deleted by hand (the next holder's token continues above the old ones)", cmd, key)
	}
	return failf("lock %s: no lock at %q", cmd, key)
}

func runLockShow(ctx context.Context, e *env, args []string) error {
	f := newLockFlags(e, "show")
	asJSON := f.Bool("json", false, "print the record as JSON")
	if err := f.parse(args); err != nil {
		return err
	}
	key, err := f.key()
	if err != nil {
		return err
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	rec, v, err := lease.Inspect(ctx, s, key)
	if errors.Is(err, store.ErrNotFound) {
		return noLock("show", key, err)
	}
	if err != nil {
		return failf("lock show: %v", err)
	}
	now := time.Now()
	r := newShowRecord(key, rec, v, now)
	if r.Queue, err = readQueue(ctx, s, key, now); err != nil {
		return failf("lock show: %v", err)
	}
	if *asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	state := r.State
	switch state {
	case "released by force":
		state += " (free once unchanged for its TTL)"
	case "looks stale":
		state += " (held, but not renewed for over two TTLs by its holder's clock)"
	case "being created":
		state += " (its creator has not yet taken a fencing token; taken over with a new one if it stays so for its TTL)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "key:       %s\n", key)
	fmt.Fprintf(&b, "state:     %s\n", state)
	fmt.Fprintf(&b, "holder:    %s\n", rec.Holder)
	if rec.Pending {
		fmt.Fprintf(&b, "token:     none yet\n")
	} else {
		fmt.Fprintf(&b, "token:     %d\n", rec.Token)
	}
	fmt.Fprintf(&b, "ttl:       %v\n", rec.TTL)
	fmt.Fprintf(&b, "acquired:  %s (holder's clock)\n", rec.Acquired.Format(time.RFC3339Nano))
	fmt.Fprintf(&b, "renewed:   %s (writer's clock), %s ago\n", rec.Renewed.Format(time.RFC3339Nano), time.Duration(r.AgeMillis)*time.Millisecond)
	takeoverLines(&b, r, rec.TTL, now)
	fmt.Fprintf(&b, "version:   %s\n", v)
	fmt.Fprintf(&b, "queue:     %d waiting (served in this order)\n", len(r.Queue))
	for _, w := range r.Queue {
		fmt.Fprintf(&b, "  %d. %s, waiting since %s (its clock), %s\n", w.Position, w.Holder, w.Since.Format(time.RFC3339), (time.Duration(w.WaitingMillis) * time.Millisecond).Round(time.Second))
	}
	io.WriteString(e.stdout, b.String())
	return nil
}

func runLockList(ctx context.Context, e *env, args []string) error {
	f := newLockFlags(e, "list")
	asJSON := f.Bool("json", false, "print one JSON object per lock")
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() != 1 {
		return usagef("lock list: want exactly one PREFIX, got %d arguments (see latchkey lock --help)", f.NArg())
	}
	prefix := f.Arg(0)
	if err := store.ValidatePrefix(prefix); err != nil {
		return usagef("lock list: %v", err)
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "KEY\tHOLDER\tTOKEN\tTTL\tRENEWED-AGO\tWAITING\tSTATE")
	}
	for it, err := range store.All(ctx, s, prefix) {
		if err != nil {
			return failf("lock list: %v", err)
		}
		rec, v, err := lease.Inspect(ctx, s, it.Key)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, lease.ErrCorrupt) {
			continue // deleted since the listing, or not a lock
		}
		if err != nil {
			return failf("lock list: %v", err)
		}
		now := time.Now()
		r := newShowRecord(it.Key, rec, v, now)
		if r.Queue, err = readQueue(ctx, s, it.Key, now); err != nil {
			return failf("lock list: %v", err)
		}
		if *asJSON {
			j, err := json.Marshal(r)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s\n", j)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%v\t%d\t%s\n", r.Key, r.Holder, r.Token, rec.TTL,
			(time.Duration(r.AgeMillis) * time.Millisecond).Round(time.Second), len(r.Queue), r.State)
	}
	tw.Flush()
	io.WriteString(e.stdout, b.String())
	return nil
}

func runLockRelease(ctx context.Context, e *env, args []string) error {
	f := newLockFlags(e, "release")
	force := f.Bool("force", false, "release the lock whoever holds it")
	holder := f.String("holder", "", "release only if the lock's holder is `NAME` (see lock show)")
	if err := f.parse(args); err != nil {
		return err
	}
	key, err := f.key()
	if err != nil {
		return err
	}
	if *force == (*holder != "") {
		return usagef("lock release: pass exactly one of --holder NAME (release your own lock) and --force (release anyone's)")
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, _, err := lease.Inspect(ctx, s, key); errors.Is(err, store.ErrNotFound) {
		return noLock("release", key, err)
	}
	wctx, cancel := settleCtx(ctx)
	if *force {
		err = lease.ForceRelease(wctx, s, key, lease.DefaultHolder()+" (--force)") // "by" whom: messages say "released by force by %s"
	} else {
		err = lease.ReleaseHolder(wctx, s, key, *holder)
	}
	cancel()
	if mayHaveApplied(err) {
		return unknownWrite(ctx, "lock release", "releasing "+key, "latchkey lock show "+key, err)
	}
	var held *lease.HeldError
	if errors.As(err, &held) {
		return failf("lock release: %q is held by %q (token %d), not by %q; nothing released (--force releases anyone's lock)",
			key, held.Holder, held.Token, *holder)
	}
	if err != nil {
		return failf("lock release: %v", err)
	}
	rec, _, err := lease.Inspect(ctx, s, key)
	if err != nil {
		return failf("lock release: %v", err)
	}
	fmt.Fprintf(e.stdout, "released %s (token %d)\n", key, rec.Token)
	return nil
}
