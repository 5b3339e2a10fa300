// Package engine is latchkey's embedded durable store: the one place where
// the server's Consul KV records, sessions and S3 metadata live.
//
// It wraps one bbolt file (dir/latchkey.db) and promises:
//
//   - Durability: Update returns only after its transaction is on disk
//     (bbolt commit, which fsyncs). A crash loses no acknowledged write.
//     If a commit fails (I/O error, full disk), every Update that ran in
//     it fails, refusals and read-only answers included (they may rest on
//     a batch-mate's write that never committed), and the engine stops
//     serving (ErrFailed) until reopened. After such a failure RemoveBlob
//     deletes nothing: the failed commit's records may have landed, and
//     the orphan sweep at the next Open decides.
//   - Reads see only durable commits: bbolt shows a commit to new readers
//     before its last fsync returns, so View waits out that window rather
//     than let a reader act on a write (or an index) a power loss could
//     still undo.
//   - Group commit: Updates that arrive while a commit is in flight are
//     applied together in the next bbolt transaction and share its fsync.
//     There is no artificial delay: a lone writer commits at once.
//   - One global index: every Update that changes something gets one fresh
//     index, strictly greater than every index before it, persisted in the
//     same transaction, never reused across restarts. It is the Consul
//     ModifyIndex and a valid fencing source. The first index is 1.
//   - Exclusive ownership: dir/LOCK is flock'ed for the engine's lifetime,
//     so a second engine (in this or another process) on the same directory
//     fails with ErrLocked.
//   - Watches without polling: Wait blocks until a commit touches a key under
//     a prefix; only waiters of touched prefixes are woken. KV keys and the
//     names layers Touch (S3, sessions) are separate: Wait and WaitTouched.
//   - Blobs: large bodies stream to files under dir/blobs, fsynced and named
//     before a transaction adopts them by id.
//
// Layers above keep their own records in raw bbolt buckets (Tx.Bucket),
// namespaced so they cannot collide with the engine's own.
package engine
