// Package lease provides leases and locks with fencing tokens over any
// store.Store that has create-if-absent and compare-and-swap put.
//
// A lease is one record at one key: the holder's name, a fresh nonce per
// write, a fencing token, the TTL, a released flag, and wall-clock times that
// are for people and tools only. A Locker contends for one key:
//
//	lk, err := lease.NewLocker(s, "locks/nightly-report", nil)
//	err = lk.Run(ctx, func(ctx context.Context, l *lease.Lease) error {
//		// ctx is cancelled before anyone else could take the lease over.
//		return writeReport(ctx, l.Token())
//	})
//
// # What the package promises
//
//   - Acquisition writes the record with create-if-absent, or with a CAS on
//     the version it read. A record that is held may be taken over only
//     after this Locker has seen it unchanged (same version) for a full TTL
//     on its own monotonic clock. Wall clocks of different hosts are never
//     compared.
//   - The fencing token goes up by one on every acquisition (takeover,
//     re-acquire after release) and never goes backwards: release keeps the
//     token and normal operation never deletes the record. A record deleted
//     by hand (latchkey kv delete) does not restart it either: the count of
//     records created at the key lives at EpochKey(key), outside the lock's
//     own prefix, and the first token of the n-th record is (n−1)·2³²+1.
//     (A creation whose write may still land uses up its epoch, so the
//     next token can jump although no record was deleted.) Deleting the
//     epoch key as well does restart the tokens; Inspect and
//     Lease.Recreated tell when a record was deleted.
//   - Only a holder's own Lease.Release lets a contender in at once.
//     ForceRelease and ReleaseHolder, which cannot stop the holder, mark
//     the record Forced, and a contender takes it over only after seeing it
//     unchanged for a full TTL, as if the holder had stopped renewing: the
//     holder's next renew fails, and it has regarded the lease as lost
//     before anyone else holds it.
//   - Renew is a CAS on our own version with a new nonce. The holder regards
//     the lease as lost at (monotonic time just before its last successful
//     renew was sent) + TTL − Margin. Done closes and Context is cancelled
//     then, which is before any contender could take over: a contender's
//     observation of that write starts no earlier than the write itself.
//   - Ambiguous outcomes (store.ErrUnknownOutcome, store.ErrTransient, a
//     conflict on a write the backend may have retried) are resolved by
//     reading the record back: our nonce means the write happened.
//
// # Stale records
//
// A holder that crashed leaves a record nobody renews. TryAcquire marks
// its *HeldError Stale when the record's last write, by the writer's own
// wall clock, is older than StaleAfter(TTL) (two TTLs: one of allowance
// for clock skew) by ours. That is only a hint: ConfirmStale then watches
// the record for up to a TTL and a poll interval and takes it over only
// if it stayed unchanged for a full TTL on our own clock, giving up as
// soon as it changes. lock run --wait 0 does so, so a crashed holder does
// not block it forever.
//
// # What a lease does not guarantee
//
// A lease bounds how often conflicting work happens; it does not prevent
// it. A holder can be paused (GC, SIGSTOP, a VM migration, a slow disk)
// after it checked that it still holds the lease and before its write to
// the protected resource lands. The resource must therefore check the
// fencing token (FencedPut refuses writes carrying a token older than the
// newest it accepted), or the protected operation must be idempotent.
// Margin covers the difference between two hosts' monotonic clock rates and
// the time the holder needs to stop; it cannot cover an unbounded pause.
//
// # Waiting and its request budget
//
// Acquire waits. Object stores have no wait primitive, so waiting is
// polling, and polling costs requests. The goroutines of one process that
// wait through one Locker take turns as a single poller, so their requests
// do not grow with their number, and a release through that Locker wakes
// the next of them at once. While the lease is held elsewhere a Locker
// makes at most one read per PollInterval (each wait jittered to 50%–150%),
// one more read when its observation window of a TTL ends, and one write
// per attempt to take a record it saw released or expired; after a lost
// race it retries at once at most three times, then waits a poll interval;
// store failures are retried with jittered exponential backoff. FencedPut,
// ForceRelease and ReleaseHolder are each one cas.Update: a bounded number
// of attempts with jittered backoff, then an error matching ErrContended.
// N processes (or Lockers) waiting on one key therefore cost about
// N/PollInterval reads per second; the default PollInterval is TTL/10 (at
// least 10ms, at most 2s), so with the default TTL of 15s each waiting
// process reads less than once a second.
//
// When the backend has a native watch (store.Watcher with
// Capabilities.Watch: memory, the directory store on Linux, Consul,
// latchkey's server) a waiter blocks on it instead of polling and reads
// the record once per change: once per RenewInterval while a holder
// renews, and once per acquisition and release. That is N reads per change
// for N waiting processes, but no reads at all while nothing changes.
package lease
