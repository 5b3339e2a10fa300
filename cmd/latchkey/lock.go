package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

const lockUsage = `Usage:
  latchkey lock run [--ttl D] [--wait D] [--grace D] [--holder NAME] [--child-exit-code] KEY -- CMD [ARGS...]
  latchkey lock show [--json] KEY
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
SIGTERM are forwarded to CMD. CMD runs in its own process group, so that
it and everything it starts can be killed together (it therefore cannot
read from a terminal); on Linux CMD is killed (SIGKILL) if lock run itself
dies, though processes CMD started may outlive it then.

If the lock is lost (the store was unreachable for about a TTL, or someone
forced a release), CMD's process group gets SIGTERM at once and SIGKILL
--grace later. lock run gives the lock up at (start of its last successful
renew) + TTL - margin, where margin = grace + TTL/10, and a contender can
take over only after seeing the record unchanged for a full TTL, so CMD is
dead before anyone else can hold the lock. --grace must therefore be less
than 40% of --ttl.

A lock bounds how often two CMDs overlap; it cannot rule it out (a paused
machine, or a lock run stopped with SIGSTOP while CMD runs on, can outlive
its lock). Pass LATCHKEY_FENCING_TOKEN to the resource
CMD writes, and have it refuse tokens older than the newest it has seen.

lock show prints the record: holder, token, held or released, TTL, and the
wall-clock times of acquisition and last renew (on the writer's clock).

lock release marks the lock released, keeping its token (the next holder
gets a higher one). Without --force it releases only a lock whose holder is
--holder (the name lock show prints; lock run's default is HOST:PID);
--force releases anyone's lock, and that holder is not told until its next
renew fails.

Exit codes:
  0  done; for lock run, CMD exited 0
  1  lock not acquired (held, --wait expired), lost while CMD ran, no such
     lock, a store failure, or CMD failed (without --child-exit-code)
  2  bad command line
  N  lock run --child-exit-code: CMD's own exit code (128+signal if a signal
     ended it); lock failures still exit 1
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

// showRecord is what lock show --json prints.
type showRecord struct {
	Key       string        `json:"key"`
	Holder    string        `json:"holder"`
	Token     uint64        `json:"token"`
	Released  bool          `json:"released"`
	TTLMillis int64         `json:"ttl_ms"`
	Acquired  time.Time     `json:"acquired"`
	Renewed   time.Time     `json:"renewed"`
	Version   store.Version `json:"version"`
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
		return failf("lock show: no lock at %q", key)
	}
	if err != nil {
		return failf("lock show: %v", err)
	}
	if *asJSON {
		b, err := json.Marshal(showRecord{Key: key, Holder: rec.Holder, Token: rec.Token, Released: rec.Released,
			TTLMillis: rec.TTL.Milliseconds(), Acquired: rec.Acquired, Renewed: rec.Renewed, Version: v})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	state := "held"
	if rec.Released {
		state = "released"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "key:       %s\n", key)
	fmt.Fprintf(&b, "state:     %s\n", state)
	fmt.Fprintf(&b, "holder:    %s\n", rec.Holder)
	fmt.Fprintf(&b, "token:     %d\n", rec.Token)
	fmt.Fprintf(&b, "ttl:       %v\n", rec.TTL)
	fmt.Fprintf(&b, "acquired:  %s (holder's clock)\n", rec.Acquired.Format(time.RFC3339Nano))
	fmt.Fprintf(&b, "renewed:   %s (writer's clock)\n", rec.Renewed.Format(time.RFC3339Nano))
	fmt.Fprintf(&b, "version:   %s\n", v)
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
		return failf("lock release: no lock at %q", key)
	}
	if *force {
		err = lease.ForceRelease(ctx, s, key, "released by "+lease.DefaultHolder()+" (--force)")
	} else {
		err = lease.ReleaseHolder(ctx, s, key, *holder)
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
