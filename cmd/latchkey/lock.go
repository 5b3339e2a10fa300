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

const lockUsage = `Usage:
  latchkey lock run [--ttl D] [--wait D] [--grace D] [--holder NAME] [--quiet] [--child-exit-code]
                    [--conflict-exit-code N] [--poll-budget RATE | --no-queue] KEY -- CMD [ARGS...]
  latchkey lock show [--json] KEY
  latchkey lock list [--json] PREFIX
  latchkey lock release [--holder NAME | --force] KEY

A lock is a lease record at KEY in the store (see package lease): holder,
fencing token, TTL, released flag. Every command takes --store URL (default
$LATCHKEY_STORE, else the directory store in $XDG_STATE_HOME/latchkey/store,
else ~/.local/state/latchkey/store), so 'lock run' on every machine that
shares a store runs CMD on at most one of them at a time.

lock run acquires the lock (waiting up to --wait; without --wait it waits
as long as it takes; --wait 0 tries once), then starts CMD with
LATCHKEY_LOCK_HELD=1 and LATCHKEY_FENCING_TOKEN=<token> in its environment.
It renews the lock while CMD runs and releases it when CMD exits. SIGINT and
SIGTERM are forwarded to CMD. CMD runs in its own process group (it
therefore cannot read from a terminal). What dies with CMD, per OS:
  Linux: CMD runs under a supervisor (latchkey itself, a child subreaper)
    that adopts every process CMD starts, however deep, in its group or
    not (setsid), SIGTERM-ignoring or not. When CMD exits, when the lock is
    lost, and when lock run dies by any signal (kill -9 included), the
    supervisor SIGKILLs them all and waits until none is alive: before the
    lock is released, and well before a TTL has passed. Not covered: a
    process of another user (setuid), one handed to a daemon (systemd-run,
    at, a container runtime), and the supervisor itself killed alone.
  macOS, BSDs: when CMD exits or the lock is lost, CMD's process group is
    killed (SIGKILL); if lock run is killed, CMD and all it started run on,
    and processes that left the group (setsid) outlive CMD in every case.
While it waits, lock run says on stderr whom it waits for
(once, and again when that changes) and when the store is unreachable;
--quiet silences that.

Waiters are served in the order they arrived, across processes and
machines: a waiting lock run takes a ticket in the lock's queue (kept at
.latchkey/lease-queue/KEY). Only the first in the queue polls the lock;
the others re-read the queue, less often the further back they are, so
all the waiters of a lock together make at most --poll-budget requests per
second while it is held (default 4; 2 on gs://, whose objects take about a
write a second), however many they are, plus one write each to arrive and
one to leave. A waiter that gives up (--wait, Ctrl-C) removes its ticket;
one that died is skipped once its ticket, first in the queue, has stayed
unchanged for its TTL. The queue only orders the waiters: the lock record
alone decides who holds the lock. --no-queue makes lock run poll the lock
itself every TTL/10, as before queues existed: whoever reads the release
first gets the lock.

A holder that crashed (SIGKILL, OOM, a reboot) leaves a record nobody
renews. When its last renewal, by the holder's own clock, is more than two
TTLs old by ours (one TTL plus one of allowance for clock skew), the lock
looks stale: lock run, even with --wait 0, then watches it for up to one
TTL and a poll, and takes it over if it stayed unchanged all that time
("... looks stale; confirming for 15s"); it gives up at once if the record
changes. --wait 0 on a lock whose holder renews gives up at once.

If the lock is lost (the store was unreachable for about a TTL, or someone
forced a release), CMD's process group gets SIGTERM at once and, --grace
later, SIGKILL to the whole group, whether or not CMD itself has exited by
then. lock run gives the lock up at (start of its last successful renew) +
TTL - margin, where margin = grace + TTL/10, and a contender can take over
only after seeing the record unchanged for a full TTL (a forced release
included), so CMD and its group are dead before anyone else can hold the
lock. --grace must therefore be less than 40% of --ttl.

A lock bounds how often two CMDs overlap; it cannot rule it out (a paused
machine, or a lock run stopped with SIGSTOP while CMD runs on, can outlive
its lock, and so can a process CMD moved out of its group). Pass
LATCHKEY_FENCING_TOKEN to the resource CMD writes, and have it refuse
tokens older than the newest it has seen; from a shell CMD, 'latchkey kv
put -fenced KEY VALUE' does that for a key of the store (it takes the
token from LATCHKEY_FENCING_TOKEN; 'kv get -fenced KEY' reads it back). Tokens never repeat for a KEY,
even if its record is deleted by hand (lock show and lock run say so when
it was); the count that ensures it is kept at .latchkey/lease-epoch/KEY,
which must not be deleted.

lock show prints the record: holder, token, state, TTL, and the wall-clock
times of acquisition and last renew (on the writer's clock) with the age of
the last renew. States: held; released (free now); released by force (free
once its holder's TTL has passed unchanged, so that the holder has stopped);
looks stale (held, but not renewed for over two TTLs); then the queue:
each waiter's position, name and since when it waits (on its clock).
lock list prints one line per lock under PREFIX (KEY HOLDER TOKEN TTL
RENEWED-AGO WAITING STATE, WAITING being the length of its queue), or with
--json one JSON object per lock, its queue included.

lock release marks the lock released, keeping its token (the next holder
gets a higher one). Without --force it releases only a lock whose holder is
--holder (the name lock show prints; lock run's default is HOST:PID), and
says who holds it otherwise; --force releases anyone's lock. Either way the
holder is not told until its next renew fails, so the lock is free for
others only after a TTL (only lock run's own release frees it at once).

Exit codes (all: latchkey help exit-codes):
  0   done; for lock run, CMD exited 0
  1   lost while CMD ran, no such lock, CMD failed (lock run without
      --child-exit-code), another error
  2   bad command line
  69  lock run: not acquired because the store could not be reached or
      refused (unreachable, no leader, access denied)
  74  lock release: the release was sent but never answered: it may or may
      not have applied (lock show tells)
  75  lock run: not acquired because another holder has it (--wait 0, or
      --wait ran out); --conflict-exit-code N to change it (as flock -E)
  N   lock run --child-exit-code: CMD's own exit code (128+signal if a
      signal ended it); lock failures keep the codes above
`

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
	f := newHelpFlags(e, "lock "+name, lockUsage+"\nFlags of lock "+name+":\n")
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
