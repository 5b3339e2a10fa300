// Package publish makes many objects appear at once on a store that can
// only change one key atomically.
//
// A Writer stores its objects under a fresh, never-reused generation
//
//	<prefix>/gen/<id>/data/<name>
//
// then an immutable manifest naming them (<prefix>/gen/<id>/manifest), and
// commits by one compare-and-swap of the pointer object <prefix>/pointer:
// create-if-absent the first time, if-match on the version it read when it
// began afterwards. The pointer write is the commit; nothing before it is
// visible to readers. A writer that loses the CAS has been superseded: its
// generation is deleted and Commit returns an error matching ErrSuperseded.
// It never retries blindly: the caller decides whether to begin again from
// the newer state. A writer deletes its own generation only when no
// pointer write of its may have applied; after an unknown outcome it
// leaves the generation to GC, since a reader may hold it.
//
// Writer.Put takes an io.Reader and Snapshot.Open returns an
// io.ReadCloser; on a store implementing store.Streamer (the directory
// store, s3store) memory does not grow with object size. Before it
// writes the manifest, Commit lists the generation to check that every
// object is still there at the version it wrote; it then swaps the pointer
// at once, and refuses (ErrAbandoned) to send a pointer write more than
// MaxSwapDelay after the manifest was written.
//
// A Snapshot reads the pointer once and then exactly the objects its
// manifest names, so a reader sees one generation whole however many
// commits happen meanwhile (snapshot isolation), for as long as garbage
// collection leaves that generation alone.
//
// GC deletes generations the pointer does not name once their grace
// period has passed: superseded ones and abandoned ones (a writer that
// died before committing). The grace period runs from the later of the
// wall-clock time embedded in the generation's id when it began and the
// Created time of its successor's manifest, which its successor's pointer
// swap follows within MaxSwapDelay (plus the latency of that one write).
// So the grace period must exceed the longest life of any reader plus
// MaxSwapDelay, and the writers' maximum age (Options.MaxAge, past which
// Commit refuses with ErrAbandoned), plus the worst clock skew between the
// hosts involved; the default grace is one hour and the default maximum
// age half of that. GC's is the one judgement that compares wall clocks:
// its own with the times writers recorded, which is all a one-shot GC
// can go by, so a step of a host's system clock counts as skew. The
// writer's own limits (MaxAge, MaxSwapDelay) are measured on its
// monotonic clock, which a step does not move.
//
// When writers are serialised by a lease (package lease), Options.Token
// carries the lease's fencing token: the pointer records it (and keeps
// the largest token it has seen), and Begin refuses with ErrFenced a
// writer whose token is older than the pointer's. A commit is also a CAS
// on the pointer version read at Begin, so once a newer holder has
// committed, no writer that began earlier can publish. What fencing cannot
// stop is a writer that lost its lease publishing before the new holder
// has committed anything: the store cannot see the lease.
package publish
