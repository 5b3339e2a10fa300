// Package engine is latchkey's embedded durable store: the one place where
// the server's state lives. It knows no service: it keeps one indexed
// table of records (Record: a key, the indexes the engine stamps, and a
// flags word and bytes that belong to the layer above) and raw buckets of
// the layers above. server/internal/consulmodel keeps Consul's KV entries
// in the records and its sessions and catalog in raw buckets;
// server/internal/s3model keeps S3's metadata in raw buckets. Neither
// layer's format is known here.
//
// It wraps one bbolt file (dir/latchkey.db) with a write-ahead log
// (dir/wal) and promises:
//
//   - Durability: Update returns only after its transaction is on disk:
//     its records appended to the write-ahead log and the log fdatasynced,
//     one fdatasync per group commit (wal.go), then committed to bbolt
//     without a sync. A background checkpoint syncs bbolt and saves its
//     meta page; Open restores that page and replays the log after it
//     (checkpoint.go), so a crash, a power loss included, loses no
//     acknowledged write and applies no batch in part.
//     If a commit fails (I/O error, full disk), every Update that ran in
//     it fails, refusals and read-only answers included (they may rest on
//     a batch-mate's write that never committed), and the engine stops
//     serving (ErrFailed) until reopened. After such a failure RemoveBlob
//     deletes nothing: the failed commit's records may have landed, and
//     the orphan sweep at the next Open decides.
//   - Reads see only durable commits: with the log, bbolt commits a batch
//     only once its record is durable, so a View runs at once on the last
//     durable commit; without it (bbolt's own fsyncs) bbolt shows a commit
//     to new readers before its last fsync returns, and View waits out
//     that window rather than let a reader act on a write (or an index) a
//     power loss could still undo.
//   - Group commit: Updates that arrive while a commit is in flight are
//     applied together in the next bbolt transaction and share its log
//     record and fdatasync.
//     There is no artificial delay: a lone writer commits at once.
//   - One global index: every Update that changes something gets one fresh
//     index, strictly greater than every index before it, persisted in the
//     same transaction, never reused across restarts. It is a record's
//     ModifyIndex (Consul's) and a valid fencing source. The first index
//     is 1.
//   - Exclusive ownership: dir/LOCK is flock'ed for the engine's lifetime,
//     so a second engine (in this or another process) on the same directory
//     fails with ErrLocked.
//   - Watches without polling: Wait blocks until a commit touches a key under
//     a prefix; only waiters of touched prefixes are woken. Record keys and
//     the names layers Touch (S3, sessions) are separate: Wait and
//     WaitTouched.
//   - Blobs: large bodies stream to files under dir/blobs, fsynced and named
//     before a transaction adopts them by id.
//   - Names: Open creates dir with internal/fsutil.MkdirAll (each created
//     parent fsynced) and syncs dir once latchkey.db, LOCK, wal/ and blobs/
//     exist, before the first Update; Mode reports how commits are made
//     durable (the log, or bbolt's own fsyncs past the log's size limit).
//
// Layers above keep their own records in raw bbolt buckets (Tx.Bucket,
// an engine Bucket with bbolt's method names whose writes also reach the
// log), namespaced so they cannot collide with the engine's own.
//
// # Using it
//
//	e, err := engine.Open(dir, &engine.Options{LiveBlobs: ..., OnCommit: ...}) // nil: defaults
//	defer e.Close()
//	idx, err := e.Update(ctx, func(tx *engine.Tx) error { ... }) // on disk before it returns
//	err = e.View(func(tx *engine.Tx) error { ... })             // a durable snapshot; tx.Index() is its index
//	mod, ok, err := e.ModifyIndex(key) // a record's ModifyIndex on the latest durable snapshot (a stale cas is refused on it)
//	e.Wait(ctx, prefix, after)        // until a commit after index `after` wrote a record under prefix
//	e.WaitTouched(ctx, prefix, after) // the same for names given to Tx.Touch
//	kvs := e.Store(codec)             // store.Store, Transactor and Watcher over the records, values in codec's format
//
// What a caller must know:
//
//   - fn may run more than once. Group commit re-runs a batch when one of
//     its members fails after writing, so fn must have no effect outside
//     tx and must reset what it captures at its top. Effects that must
//     happen once (timers, RemoveBlob, waking others) go after Update
//     returns.
//   - fn runs on the engine's single writer goroutine: it must not block,
//     and it must never call Update (that deadlocks).
//   - fn returning an error applies nothing it wrote and consumes no
//     index. Check preconditions before writing where possible: a failing
//     fn that wrote nothing does not force its batch to re-run.
//   - An Update that calls PutRecord, DeleteRecord of an existing key, or
//     Touch gets one fresh index, tx.Index(), shared by all its records;
//     one that changes nothing returns the current index and consumes
//     none. So an identical rewrite that must not move the index (Consul's
//     ModifyIndex) compares first and does not call PutRecord.
//   - PutRecord stamps ModifyIndex with tx.Index() and CreateIndex with the
//     existing record's (or tx.Index() for a new key); Flags and Data are
//     stored as given. On disk a record is flags, create, modify (8 bytes
//     each, big endian), then Data. DeleteRecord leaves a tombstone, so
//     KeysIndex(prefix) moves forward on deletes. Tombstones are reaped
//     after Options.TombstoneTTL (15 minutes by default, as Consul); a
//     reaped tombstone's index becomes a floor for every KeysIndex, so
//     prefix indexes never go backwards (a blocking list may return once,
//     early, after a reap).
//   - Raw buckets: Tx.Bucket in an Update creates the bucket on demand and
//     counts as a write; in a View it is nil when absent. Tx.ReadBucket
//     reads inside an Update without counting as a write. Raw writes wake
//     no waiter and consume no index unless the Update calls Tx.Touch
//     (consulmodel touches "\x00consul/session/"+id and consulapi waits
//     with WaitTouched on "\x00consul/session/"). Touched names and record
//     keys never match each other, so a waiter on the root prefix "" is not
//     woken by S3 or session writes.
//   - Blobs: NewBlob, write, then Commit (or Abort) before the Update that
//     stores the id in a record. If that Update fails, RemoveBlob(id);
//     after a committed Update drops a blob's last reference, RemoveBlob(id).
//     OpenBlob reads one. Blobs orphaned by a crash are swept at Open only
//     when Options.LiveBlobs names the referenced ones (server/internal/s3api's
//     LiveBlobs does, and the server passes it).
//   - Reads return errors, never panic, on a record they cannot decode
//     (ErrCorrupt).
//   - Errors: ErrLocked (another server holds dir), ErrClosed, ErrFailed (a
//     commit failed; every later Update and View fails with it until the
//     directory is reopened, and Err reports it: answer 5xx, and the
//     server's /-/health turns 503).
//   - Tests may open with Options.NoSync (fast, not durable, and without
//     the log; a log left in the directory is replayed first); HTTP tests
//     use server/servertest.
//   - Raw writes go through the Bucket (or its Cursor) that Tx.Bucket
//     returns: a write through ReadBucket's bbolt bucket would not reach
//     the log and would not survive a crash.
//
// A blocking read passes the tx.Index() of the View it just read from as
// Wait's after, and re-reads when Wait returns (it may return early). A
// single-key watch waits on the key as prefix (longer keys wake it too, so
// re-check):
//
//	for {
//		var idx, seen uint64
//		e.View(func(tx *engine.Tx) error { idx = tx.KeysIndex(p); seen = tx.Index(); ...; return nil })
//		if idx > want || timedOut {
//			return result
//		}
//		if err := e.Wait(ctx, p, seen); err != nil { ... } // ctx carries the wait timeout
//	}
package engine
