// Package filestore is a store.Store kept in a local directory, safe for
// concurrent use by goroutines and by separate processes on one machine.
// It is latchkey's default store, so a lock taken through it works across
// processes with no server at all; the store URL file:///dir means
// Open("/dir", nil).
//
// Every conditional operation is atomic across processes, and the store
// implements store.Transactor (multi-key, all or nothing, crash-safe) and
// store.Streamer (PutStream and GetStream never hold a value whole in
// memory). It implements store.Watcher: on Linux WaitChange waits on
// inotify(7) events of the key's bucket directory, so a write by any
// process wakes it at once, and Capabilities.Watch is true; elsewhere it
// polls every Options.PollInterval, jittered, and Capabilities.Watch is
// false. (On Linux it polls too while the user has no inotify instance
// left, which only makes it slower.)
//
// # On-disk layout
//
//	dir/latchkey-filestore   format marker: "latchkey-filestore 1\nstripes N\n"
//	dir/counter              highest version reserved so far (decimal)
//	dir/locks/stripe-NN      flock(2) targets, one per lock stripe
//	dir/locks/counter        flock(2) target guarding dir/counter
//	dir/data/<bucket>/<sha256(key) in hex>   one value file per key
//	dir/tmp/                 values being written, before publication
//	dir/txn/j-<stripes>-<id> journals of multi-key transactions
//
// A key never becomes a path: its value file is named by the SHA-256 of the
// key, so any valid key (up to store.MaxKeyLen bytes, segments longer than
// a file name may be, any Unicode, names differing only in case) is
// storable, cannot escape dir and cannot name an internal file. The bucket
// is a digest of the key's first '/'-separated segment ("_" for keys
// without '/'); it lets List read only the files that can match a prefix
// containing '/'. A value file is a header (magic, version, value length,
// key) followed by the value; the key in the header is what List returns
// and what Get checks. Buckets are created on first use and never
// removed.
//
// # Locking
//
// A key belongs to one of N lock stripes (N = 64 by default, fixed when the
// directory is created, since all processes must agree), picked by its
// digest. A stripe is locked by an in-process gate (so goroutines queue
// cheaply and a context can end the wait) and then by flock(2) on
// locks/stripe-NN (so processes exclude each other). Reads take the flock
// shared, writes exclusive; a transaction takes all its stripes
// exclusively in ascending order, so lockers never deadlock. A crashed
// process's flocks are released by the kernel. With 16 parallel writers of
// distinct keys, 64 stripes measured 1.5-2.5x the throughput of one global
// lock (BenchmarkStripes), because the directory fsync happens under the
// lock.
//
// Under its stripe's exclusive lock a write reads the current version from
// the value file's header, checks the condition and publishes. The value
// was already written and fsynced to a file under tmp/ before the lock was
// taken; publication is rename(2) over the old value file, or link(2) for
// IfAbsent, which fails by itself if the key exists. A value file is never
// modified after publication, so a reader that opened one (GetStream) keeps
// exactly that version's bytes however long it reads.
//
// Versions are decimal numbers from dir/counter. A process reserves a block
// of numbers (16, doubling up to 65536) by durably advancing the counter
// under locks/counter before using any of them, so a version is never
// reused in the directory: not after a delete, not by another process, not
// after a crash or restart. Versions are short, not ordered across
// processes (the contract does not require that), and restoring dir from
// an old backup would rewind the counter.
//
// # Transactions and crashes
//
// A transaction stages its values under tmp/ (fsynced), locks its stripes,
// checks every condition and that its staged files are still there, and
// then, when it writes more than one key, fsyncs tmp/ (so the staged
// names are durable before anything names them) and writes a journal
// txn/j-<stripe bitmap>-<id> (fsynced, published by rename, txn/ fsynced):
// the commit point. It applies the renames and
// unlinks, fsyncs the touched directories, removes the journal and fsyncs
// txn/, and only then unlocks. If the process dies, the next process to
// lock any stripe the journal names finishes the transaction first, before
// it reads or writes; so does Open, and List. Applying is idempotent. A
// journal that names a stripe we hold cannot belong to a live process,
// because its writer holds all its stripes from before it writes the
// journal until after it removes it. An I/O error (ENOSPC, EIO) while a
// transaction applies its journal is handled as a crash there: the
// transaction answers ErrUnknownOutcome, its staged files stay for the
// journal, and the next locker of its stripes (or Open) rolls it forward.
//
// # Durability
//
// A write that returned nil is on disk: its value file was fsynced before
// publication, and its directory after the rename, link or unlink (and
// data/ after a bucket is created). An error matching
// store.ErrUnknownOutcome means the write may be visible but a later fsync
// failed. One window remains: a process killed between publishing a value
// and fsyncing its directory leaves the value visible to others at once
// but durable only once the kernel writes the directory back, so a power
// loss in that moment can undo a value another process has already read.
// The directories Open creates on the way to dir are fsynced into their
// parents (internal/fsutil.MkdirAll), so a power cut cannot take the
// whole store with them.
//
// Open removes temporary files older than StaleTempAge that no journal
// names and no live writer holds: a writer keeps a shared flock(2) on each
// value it stages until it is published or given up, so one paused for
// longer than StaleTempAge keeps its files; should they vanish anyway, its
// transaction fails with store.ErrTransient before writing a journal.
//
// # Limits
//
// flock(2) must work between all the processes that share dir: a local
// file system on one machine. Do not put dir on NFS or another network or
// distributed file system, where flock is emulated, advisory per client or
// absent, and the store's atomicity across machines would silently not
// hold. Open refuses a platform without flock(2) (Windows, for now) and a
// non-empty directory that is not a store. List reads the header of every
// value file in the buckets a prefix can match (all of them for a prefix
// without '/') and sorts; it is meant for thousands of keys, not millions.
// Each write creates a file and costs two fsyncs.
package filestore
