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
//     re-acquire after release) and never goes backwards: every token
//     handed to a holder is above every token handed out at the key
//     before, whatever order requests land in. Release keeps the token
//     and normal operation never deletes the record. A record deleted by
//     hand (latchkey kv delete) does not restart it either: the count of
//     records created at the key lives at EpochKey(key), outside the
//     lock's own prefix, and the first token of the n-th record is
//     (n−1)·2³²+1. A creation advances that count in the same step as it
//     creates the record: in one transaction where the store has them,
//     and otherwise by creating the record pending (no token), then
//     advancing the count, then giving the record its token by CAS (see
//     Record.Pending), so a create that lands late, after the record was
//     deleted and others held it, cannot start below them. Deleting (or
//     rewriting) the epoch key as well does restart the tokens; see
//     docs/locks.md for what that allows. Inspect and Lease.Recreated
//     tell when a record was deleted.
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
// # Waiting in line, and its request budget
//
// Acquire waits. Object stores have no wait primitive, so waiting is
// polling, and polling costs requests. Left alone, N processes waiting
// on one key would cost N reads per PollInterval, and whoever read the
// release first would win, however long the others had waited. So by
// default waiters stand in line: Acquire that finds the lease held (or
// free, but with others waiting) puts a ticket at the end of the queue
// at QueueKey(key), one small record beside the lease, and waiters are
// served in the order their tickets were written, across processes and
// machines, with no coordinator: every change to the queue is a CAS.
//
//   - Only the head of the queue (the first ticket) polls the record: every
//     max(PollInterval, 2/PollBudget) seconds, or it blocks on the native
//     watch where the store has one. It removes its ticket once it holds
//     the lease; the last waiter out deletes the emptied record.
//   - The first w tickets are the window: w = PollBudget·TTL/20 seconds,
//     at least 2 and at most 8 (three at the defaults), so that their
//     heartbeats take at most 30% of the budget. Their waiters rewrite
//     their tickets every TTL/3 (a heartbeat, a read and a write).
//   - The others re-read the queue: the next in line every c, the first
//     one behind the window every c (both at least once a heartbeat),
//     and the waiter at place p behind them every p·c (jittered), with c
//     chosen from the PollBudget so that all of them together read at most
//     80% of what the budget leaves after the head and the heartbeats
//     (Σ 1/(p·c) is a harmonic number over c), and at least PollInterval.
//     A line that stands still costs that; a waiter that knows the
//     line's pace (seen, or Queue.Pace, written by the last waiter
//     served) reads again before it could have moved into the window, and
//     no sooner than 0.6 times how long the line has stood still, up to a
//     TTL. With a native watch the window and the one behind it block on
//     the queue record and read it on every change, so the next in line
//     becomes the head as soon as the head leaves; and the waiters behind
//     that the line has not moved for a TTL block on MovedKey(key),
//     which the waiter served rewrites as it leaves, so that they follow
//     a line that starts moving after a long hold.
//   - A ticket of the window that another waiter of the window, or one
//     behind it, sees unchanged for half the ticket's TTL, on its own
//     monotonic clock, is taken for dead and removed, with any other
//     ticket of the window that waiter has seen unchanged as long; the
//     waiters behind move up at once. Wall clocks are never compared:
//     Since in a ticket is for people only. A waiter that gives up (ctx
//     ends) removes its ticket on the way out. One that was killed is found
//     out within 5/6 of a TTL of its last heartbeat in the window, or of
//     reaching the window if it died further back (the waiters that time
//     it read at least once a heartbeat), and a run of up to w killed one
//     behind the other goes in the same time. Tickets that such a removal
//     pulls into the window several places at once are marked Pulled and
//     get their whole TTL, since their waiters could not see that coming:
//     so each w dead more cost up to a TTL more.
//   - A waiter whose ticket disappeared (it was paused for half its TTL
//     and taken for dead, or someone deleted the queue record) writes it
//     back with its old sequence number, hence in its old place.
//
// The queue is advisory. Acquisition still goes only through the CAS on
// the lease record, so a corrupt or deleted queue record, or a waiter that
// ignores the queue (NoQueue, or TryAcquire, which takes a free lease
// whoever waits), changes who goes first, never the guarantees above:
// never two holders, tokens strictly increasing. A queue record that is
// not one is treated as empty and overwritten.
//
// The goroutines of one process that wait through one Locker take turns
// as a single waiter (one ticket at a time), and a release through that
// Locker wakes the next of them at once.
//
// Costs at the defaults (TTL 15s, PollInterval 1.5s, PollBudget 4/s, a
// window of three), counted over an hour on fake time while the lease is
// held: the head about 3,900 requests (2,400 polls of the record, about
// 2,640 with the jitter, and 720 heartbeats of a read and a write); the
// next in line about 3,000 with ten waiters (its heartbeats and a read
// every c) and 2,200 with a hundred; the third of the window 1,550; the
// first behind the window 1,800 with ten and 1,000 with a hundred; the
// rest of the line the remainder. All waiters together: 3,150 for one,
// 12,050 for ten, 12,050 for a hundred, under 14,400 (4/s) whatever their
// number (TestQueueRequestBudget checks it), where 100 waiters without
// the queue would make 240,000. The holder's renews add
// 3,600/RenewInterval an hour (900 at the default 4s). Each waiter also
// pays once to arrive (a read of the record, a read and a write of the
// queue, and one early read of the queue to see whether the line moves)
// and once to leave (a write); a CAS lost to
// another waiter's queue write costs one more read and write, with
// backoff from QueueRetryDelay. A line that moves costs each waiter about
// log(n) reads more over its wait, to follow it (with a native watch the
// window and the one behind it read once per queue write instead). A free
// lease with nobody
// waiting costs what it did: a read of the record, one of the queue, and
// the acquiring write. After a lost race Acquire retries at once at most
// three times, then waits a poll interval; store failures are retried
// with jittered exponential backoff. FencedPut, ForceRelease and
// ReleaseHolder are each one cas.Update: a bounded number of attempts
// with jittered backoff, then an error matching ErrContended. The handoff
// from a release to the next holder takes about half the head's poll
// interval on average, whatever the number of waiters; with a native
// watch it is immediate, and the next in line takes its turn as soon as
// the head leaves, however short the holds (TestQueueThroughput). On a
// store that must be polled, holds shorter than a poll interval are
// served at most about once per head poll interval.
//
// Per service: S3 and Azure serve a few requests per second per key
// comfortably, and the default budget fits. GCS takes about one write
// per second per object: the queue's steady writes (one heartbeat per
// ticket of the window every TTL/3; at lock run's gs:// budget of 2/s the
// window is two tickets, 0.4 writes/s at the default TTL) fit, and a
// crowd arriving at once is spread by QueueRetryDelay (lock run uses a
// QueueRetryDelay of 1s on gs://).
//
// With NoQueue, each Locker polls the record itself: at most one read
// per PollInterval (each wait jittered to 50%–150%), one more read when
// its observation window of a TTL ends, and one write per attempt to
// take a record it saw released or expired. N processes cost about
// N/PollInterval reads per second; the default PollInterval is TTL/10 (at
// least 10ms, at most 2s).
//
// When the backend has a native watch (store.Watcher with
// Capabilities.Watch: memory, the directory store on Linux, Consul,
// latchkey's server) the head (or, with NoQueue, every waiter) blocks on
// it instead of polling and reads the record once per change: once per
// RenewInterval while a holder renews, and once per acquisition and
// release. The others in line read the queue as above.
package lease
