// Package cas is the read-modify-write loop over a store.Store: read a key,
// compute its new state with a function, write it back only if nobody wrote
// in between, and on a lost race read again and recompute.
//
// Update promises:
//
//   - No lost update. Every write is conditional on the version that was
//     read (IfAbsent when the key was absent, IfMatch otherwise), and a
//     refused write is never retried with that stale version: the key is
//     read again and the function runs again on what is there now.
//   - No endless loop. Lost races (ErrConflict) and transport failures
//     (ErrTransient) have separate, bounded budgets: a count of lost races
//     (MaxAttempts), and a time for transport failures, which are retried
//     until the caller's deadline (ctx's or Timeout) or, without one, for
//     TransientBudget, so an outage as long as a leader election is
//     ridden out rather than failed after a handful of quick tries.
//     Between tries Update sleeps with exponential backoff and full
//     jitter under a cap (after a lost race starting no lower than the
//     store's round trip and the contention the last Update of the key
//     met; see Options.BaseDelay); an optional Timeout stops it from
//     starting new tries; ctx is checked every turn. Running out of tries
//     returns an error matching ErrContended that says how many attempts
//     were made; running out of time for transport failures returns the
//     last one, saying how many came over how long.
//   - No racing yourself. Updates of one key through one store value, in
//     one process, take turns (one attempt in flight at a time), so 64
//     goroutines on a hot key cost the store about one read and one write
//     per update instead of several; only other processes' writes make an
//     attempt lose.
//   - Fair across processes. Contenders from different processes are
//     served roughly in arrival order through a waiting line kept in the
//     store beside the key (tickets under LinePrefix(key)), which an
//     Update joins after two lost races: with 64 processes on one
//     key, p99 within 1.2× p50 and every process within 10% of the mean
//     share (TestUpdateIsFairAcrossProcesses), where whoever had just won
//     used to win again (p99 1 s, p50 11 ms). An Update that wins at once
//     sends one read and one write, as before, except that a process
//     that keeps winning one key at once (Updates within a second of each
//     other) lists its line now and then (at the 8th win, then ever more
//     rarely while it finds the line empty, down to one in 256), so that
//     one close to the store cannot capture the key while the others wait
//     in the line (TestANearProcessDoesNotCaptureTheKey). The line orders attempts;
//     it never decides a write, and a dead contender's ticket is passed
//     after 4 MaxDelays.
//   - Honest outcomes. A write whose outcome is unknown
//     (store.ErrUnknownOutcome) is resolved by re-reading where that
//     proves something and returned to the caller where it does not; see
//     Update for the exact rule. Once a write's outcome is unknown the
//     function is never called again (the write may land late, and a
//     second run would apply the change twice), a lost race is not taken
//     as proof that nothing was written, and whatever error Update
//     returns matches store.ErrUnknownOutcome. Neither a key found
//     unchanged after a create (absent again) nor a conflict proves a
//     write did not apply; only its own bytes, with
//     Options.UniqueValues, prove it did.
//
// On a store without store.Capabilities.UniqueVersions (S3, whose
// version is a digest of the bytes) a version names a content, not a
// write: a key that went A → B → A, with the same bytes A, is at A's
// version again. A plain function of the value is still right there (it
// sees exactly the bytes it replaces), but the ABA case exists for user
// values: an Update whose write of unknown outcome was applied and then
// overwritten with the bytes it read sees "the same version", takes the
// write for not applied and sends it again. Values that carry a nonce or
// a counter of their own (lease records, publish pointers) never repeat
// and are not affected.
//
// Every wait, backoff and timeout is measured on the monotonic clock
// (time.Now's readings compared with each other, never a wall-clock time
// that went through a number or a record), so a step of the system clock
// neither stretches nor cuts any of them.
//
// The function may run several times and must not have side effects that
// cannot be repeated; it must not keep or modify the slice it is given.
//
// cas imports the store contract only, never a backend or an SDK.
package cas
