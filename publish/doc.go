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
// the newer state.
//
// A Snapshot reads the pointer once and then exactly the objects its
// manifest names, so a reader sees one generation whole however many
// commits happen meanwhile (snapshot isolation), for as long as garbage
// collection leaves that generation alone.
//
// GC deletes generations the pointer does not name that are older than a
// grace period: superseded ones and abandoned ones (a writer that died
// before committing). The age of a generation is the wall-clock time
// embedded in its id when it began, so the grace period must exceed the
// longest life of any reader or writer plus the worst clock skew between
// the hosts involved; the default is one hour.
//
// When writers are serialised by a lease (package lease), Options.Token
// carries the lease's fencing token: the pointer records it, and a commit
// whose token is older than the pointer's is refused with ErrFenced, so a
// writer that lost its lease without knowing cannot publish.
package publish
