package main

// The lock commands' help: usage and flags first, then one short
// paragraph, examples and exit codes. The long explanation (what dies
// with CMD on each OS, the queue, stale and lost locks, fencing) is
// docs/cli.md's "lock run in depth".

const lockDocs = `docs/cli.md, "lock run in depth" (what dies with CMD on each OS,
the queue, stale and lost locks, --grace, fencing tokens)`

// lockUsage is latchkey lock --help.
const lockUsage = `Usage:
  latchkey lock run [flags] KEY -- CMD [ARGS...]
  latchkey lock show [--json] KEY
  latchkey lock list [--json] PREFIX
  latchkey lock release [--holder NAME | --force] KEY

A lock is a lease record at KEY in the store (--store URL, else
$LATCHKEY_STORE, else a directory store under ~/.local/state/latchkey):
holder, fencing token, TTL. 'lock run' on every machine that shares a
store runs CMD on at most one of them at a time. 'latchkey lock
SUBCOMMAND --help' shows a subcommand's flags and examples.

Exit codes (all: latchkey help exit-codes):
` + lockExits + `
More: ` + lockDocs + `.
`

// lockExits are the exit codes of every lock subcommand.
const lockExits = `  0   done; for lock run, CMD exited 0
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

var lockHelps = map[string]helpText{
	"run": {
		synopsis: "[flags] KEY -- CMD [ARGS...]",
		about: `Acquires the lock at KEY (waiting as --wait says, in the order waiters
arrived), runs CMD with LATCHKEY_LOCK_HELD=1 and LATCHKEY_FENCING_TOKEN in
its environment, renews the lock while CMD runs and releases it when CMD
exits. If the lock is lost, CMD and everything it started get SIGTERM, then
SIGKILL --grace later, before anyone else can hold the lock. A holder that
crashed is taken over once its record looks stale and stays unchanged for
a TTL. A lock bounds overlap but cannot rule it out: have CMD's writes
refuse older tokens (kv put -fenced).`,
		examples: `  latchkey lock run jobs/backup -- ./backup.sh
  latchkey lock run --wait 0 jobs/rotate -- logrotate app.conf   # cron: skip if running (exit 75)
  latchkey lock run --wait 10m --child-exit-code jobs/deploy -- make deploy
  latchkey lock run jobs/db -- sh -c 'latchkey kv put -fenced db/schema 42'
`,
		exits: `  0   CMD exited 0
  1   lost while CMD ran; CMD failed (without --child-exit-code)
  2   bad command line
  69  not acquired: the store could not be reached or refused
  75  not acquired: another holder has it (--conflict-exit-code N)
  N   --child-exit-code: CMD's own exit code
`,
		more: lockDocs,
	},
	"show": {
		synopsis: "[--json] KEY",
		about: `Prints the lock's record: state (held, released, released by force, looks
stale, being created), holder, token, TTL, when it was acquired and last
renewed, when it expires (renewed + TTL) and when a taker may take it
over, all on the writer's clock and the same on every call; then its
queue of waiters in the order they will be served.`,
		examples: `  latchkey lock show jobs/backup
  latchkey lock show --json jobs/backup | jq .holder
`,
		exits: `  0   shown
  1   no lock at KEY, or an error
  2   bad command line
`,
		more: lockDocs,
	},
	"list": {
		synopsis: "[--json] PREFIX",
		about: `Prints one line per lock under PREFIX: KEY HOLDER TOKEN TTL RENEWED-AGO
WAITING STATE (WAITING: the length of its queue), or with --json one JSON
object per lock, its queue included.`,
		examples: `  latchkey lock list jobs/
`,
		exits: `  0   listed (none is no error)
  1   an error
  2   bad command line
`,
		more: lockDocs,
	},
	"release": {
		synopsis: "[--holder NAME | --force] KEY",
		about: `Marks the lock released, keeping its token (the next holder gets a higher
one). Without --force it releases only a lock held by --holder (the name
lock show prints); --force releases anyone's. The holder is not told until
its next renew fails, so the lock is free for others only after a TTL.`,
		examples: `  latchkey lock release --holder web-3:4121 jobs/backup
  latchkey lock release --force jobs/backup
`,
		exits: `  0   released
  1   held by another holder (without --force), no such lock, an error
  2   bad command line
  74  the release was sent but never answered: lock show tells
`,
		more: lockDocs,
	},
}
