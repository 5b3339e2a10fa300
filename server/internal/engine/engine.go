package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/fsutil"
	"go.etcd.io/bbolt"
)

// Errors returned by the engine.
var (
	// ErrLocked: another engine (this process or another) holds the
	// data directory.
	ErrLocked = errors.New("engine: data directory is locked by another latchkey server")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine: closed")
	// ErrFailed: a commit failed in bbolt (an I/O error, a full disk).
	// The engine then refuses every further Update and View until it is
	// reopened: after a failed fsync bbolt's in-memory view of the file may
	// name pages it has just freed, and writing on would corrupt it.
	// Reopening reads the file's last valid meta page.
	ErrFailed = errors.New("engine: a commit failed; reopen the data directory")
)

// maxBatch caps how many Updates share one commit.
const maxBatch = 1024

// Engine is an open data directory. All methods are safe for concurrent
// use.
type Engine struct {
	dir   string
	opts  Options
	db    *bbolt.DB
	lock  *os.File
	index atomic.Uint64 // latest committed index

	mu     sync.RWMutex // guards closed and sends on reqs
	closed bool
	reqs   chan *request
	done   chan struct{} // closed when the writer loop exits

	watch watchers
	now   func() time.Time // the clock; tests substitute it
	stop  chan struct{}    // closed by Close: ends the reaper

	updates atomic.Uint64
	commits atomic.Uint64

	failure atomic.Pointer[error] // set once by the first failed commit

	// durableTx is the latest bbolt transaction id known to be on disk.
	// bbolt makes a commit visible to new readers when it writes the meta
	// page, before that page's fsync returns; View waits out that window
	// so no reader sees a write that a power loss could still undo.
	durableTx  atomic.Uint64
	syncMu     sync.Mutex
	synced     chan struct{} // closed (and replaced) after each commit attempt
	afterWrite func()        // tests: runs after a commit, before it is published as durable
	syncFault  func() error  // tests: a non-nil result fails a commit whose writes reached the file (an fsync EIO)

	log         *logState    // the write-ahead log; nil without (NoSync)
	mode        atomic.Value // Mode: how commits are made durable now
	appendFault func() error // tests: a non-nil result fails the log append before it writes (ENOSPC)
}

// Internal bucket names. Raw buckets of other layers get rawPrefix.
var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("kv") // the records; named "kv" on disk since the first release
	bucketTomb    = []byte("tomb")
	keyIndex      = []byte("index")     // latest committed index
	keyKVIndex    = []byte("kvindex")   // latest index that changed the kv table
	keyTombFloor  = []byte("tombfloor") // greatest index of a reaped tombstone
)

const rawPrefix = "x/"

// Open opens (creating if needed) the data directory dir. It fails with an
// error matching ErrLocked when another engine holds dir.
func Open(dir string, opts *Options) (*Engine, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// Every directory made on the way is durable before anything in it
	// is acknowledged.
	if err := fsutil.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: create data directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{dir: dir, lock: lock, reqs: make(chan *request, 4096), done: make(chan struct{}),
		now: time.Now, stop: make(chan struct{})}
	e.opts = o
	e.watch.init()
	if err := e.open(); err != nil {
		if e.log != nil {
			e.log.abandon()
		}
		if e.db != nil {
			e.db.Close()
		}
		lock.Close()
		return nil, err
	}
	go e.writer()
	go e.reaper()
	return e, nil
}

func (e *Engine) open() error {
	dbPath := filepath.Join(e.dir, "latchkey.db")
	useLog := !e.opts.NoSync && !e.opts.noLog
	// Whatever was in use before, a log left in dir is recovered first.
	slot, err := restoreCheckpoint(e.dir, dbPath)
	if err != nil {
		return err
	}
	if st, err := os.Stat(dbPath); err == nil && st.Size() > e.opts.mmapSize/2 {
		useLog = false // see Engine.leaveLog
		e.opts.Logger.Info("engine: the database is past half the log's memory map; commits fsync bbolt itself",
			"size", st.Size(), "threshold", e.opts.mmapSize/2)
	}
	// Decided once, from the final choice: with the log, bbolt needs no
	// fsync of its own; without it, only Options.NoSync may skip them.
	mode := ModeFsync
	switch {
	case e.opts.NoSync:
		mode = ModeNoSync
	case useLog:
		mode = ModeLog
	}
	bopts := &bbolt.Options{
		Timeout:      time.Second,
		NoSync:       mode != ModeFsync,
		FreelistType: bbolt.FreelistMapType,
		// As etcd: the freelist is rebuilt at open instead of written by
		// every commit, so a commit writes (and fsyncs) fewer pages.
		NoFreelistSync: true,
		MaxSize:        e.opts.maxSize,
		// bbolt's transaction statistics are never read; collecting them
		// takes a lock per transaction.
		NoStatistics: true,
	}
	if useLog {
		bopts.InitialMmapSize = int(e.opts.mmapSize)
	}
	db, err := bbolt.Open(dbPath, 0o600, bopts)
	if err != nil {
		return fmt.Errorf("engine: open %s: %w", e.dir, err)
	}
	e.db = db
	// One transaction initialises and replays: it cannot reuse a page of
	// the tree it starts from, so until the checkpoint below is saved the
	// restored checkpoint stays intact for the next Open.
	var seq uint64
	replayed := 0
	err = db.Update(func(btx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketRecords, bucketTomb} {
			if _, err := btx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := btx.Bucket(bucketMeta)
		if meta.Get(keyIndex) == nil {
			if err := meta.Put(keyIndex, u64(1)); err != nil {
				return err
			}
		}
		var err error
		seq, replayed, err = e.replay(btx)
		return err
	})
	if err != nil {
		return fmt.Errorf("engine: initialise %s: %w", e.dir, err)
	}
	if replayed > 0 {
		e.crashPoint(crashReplayed)
	}
	if useLog {
		if err := e.openLog(seq, slot); err != nil {
			return err
		}
	} else if _, err := os.Stat(walDir(e.dir)); err == nil {
		// Without the log from now on: bbolt's file holds everything.
		if err := db.Sync(); err != nil {
			return fmt.Errorf("engine: sync: %w", err)
		}
		if err := os.RemoveAll(walDir(e.dir)); err != nil {
			return fmt.Errorf("engine: remove log: %w", err)
		}
		if err := syncDir(e.dir); err != nil {
			return err
		}
	}
	if err := db.View(func(btx *bbolt.Tx) error {
		e.index.Store(getU64(btx.Bucket(bucketMeta).Get(keyIndex)))
		return nil
	}); err != nil {
		return fmt.Errorf("engine: initialise %s: %w", e.dir, err)
	}
	if err := e.setMode(mode); err != nil {
		return err
	}
	e.watch.base = e.index.Load()
	e.synced = make(chan struct{})
	if err := db.View(func(btx *bbolt.Tx) error { e.durableTx.Store(uint64(btx.ID())); return nil }); err != nil {
		return fmt.Errorf("engine: initialise %s: %w", e.dir, err)
	}
	if err := e.sweepBlobs(); err != nil {
		return err
	}
	// The names Open made or found (latchkey.db, LOCK, wal/, blobs/) are
	// durable before the first acknowledgement: the data directory's own
	// entries are synced here, wal/'s by openLog, blobs/'s by sweepBlobs.
	return syncDir(e.dir)
}

// Dir is the data directory.
func (e *Engine) Dir() string { return e.dir }

// Index is the latest committed index; at least 1.
func (e *Engine) Index() uint64 { return e.index.Load() }

// Err is nil while the engine works, else the error of the commit that
// failed (matching ErrFailed); see ErrFailed. It does not report Close.
func (e *Engine) Err() error {
	if p := e.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records the first commit failure and returns the error every
// Update of that commit and after it gets.
func (e *Engine) fail(cause error) error {
	err := fmt.Errorf("%w: %w", ErrFailed, cause)
	if e.failure.CompareAndSwap(nil, &err) {
		e.watch.wakeAll() // blocking reads end now instead of at their timeout
	}
	return *e.failure.Load()
}

// Stats are counters since Open.
type Stats struct {
	Updates uint64 // Updates carried by a durable commit (a read-only one only if its batch wrote)
	Commits uint64 // bbolt commits, i.e. fsync rounds
}

// Stats returns the counters since Open. Updates/Commits is the mean group
// commit batch size.
func (e *Engine) Stats() Stats {
	return Stats{Updates: e.updates.Load(), Commits: e.commits.Load()}
}

// Close waits for queued Updates to finish, then closes the database and
// releases the directory lock. Waiters return ErrClosed. Close is
// idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.done
		return nil
	}
	e.closed = true
	close(e.reqs)
	close(e.stop)
	e.mu.Unlock()
	<-e.done
	e.watch.close()
	var err error
	if e.log != nil {
		err = e.closeLog()
	}
	if cerr := e.db.Close(); err == nil {
		err = cerr
	}
	if lerr := e.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// View runs fn in a read-only snapshot. tx.Index() is the latest index
// committed in that snapshot. The snapshot holds only durable commits: a
// View that starts while a commit is being fsynced waits for that fsync
// (so a reader never sees, nor acts on, a write that a power loss could
// still undo, and never sees an index that could go backwards).
func (e *Engine) View(fn func(tx *Tx) error) error {
	btx, err := e.beginDurable()
	if err != nil {
		return err
	}
	defer btx.Rollback()
	return fn(&Tx{btx: btx})
}

// ModifyIndex is key's ModifyIndex in the latest durable snapshot, and
// whether key exists there: View with GetRecord, without copying the record
// or allocating a Tx. It is how a caller decides, without entering the
// writer, that a write's condition already fails (a compare-and-set on a
// stale index). The snapshot is at least as new as every Update
// acknowledged before ModifyIndex was called (an Update's commit is
// published before it returns), and it is the state at the moment it was
// taken, so an answer decided on it is linearizable at that moment.
func (e *Engine) ModifyIndex(key string) (index uint64, exists bool, err error) {
	btx, err := e.beginDurable()
	if err != nil {
		return 0, false, err
	}
	defer btx.Rollback()
	v := btx.Bucket(bucketRecords).Get([]byte(key))
	if v == nil {
		return 0, false, nil
	}
	if len(v) < recordHeader {
		return 0, false, fmt.Errorf("%w %q: %d bytes", ErrCorrupt, key, len(v))
	}
	return getU64(v[16:24]), true, nil
}

// beginDurable begins a bbolt read transaction on the latest durable
// commit, waiting for the fsync of a commit in flight when bbolt already
// shows it (without the log). The caller rolls it back.
func (e *Engine) beginDurable() (*bbolt.Tx, error) {
	for {
		if e.isClosed() {
			return nil, ErrClosed
		}
		if err := e.Err(); err != nil {
			return nil, err
		}
		synced := e.syncedChan()
		btx, err := e.db.Begin(false)
		if err != nil {
			return nil, err
		}
		if uint64(btx.ID()) <= e.durableTx.Load() {
			return btx, nil
		}
		btx.Rollback()
		<-synced // the commit in flight has been fsynced (or failed)
	}
}

func (e *Engine) syncedChan() <-chan struct{} {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	return e.synced
}

// published is called by the writer after every commit attempt: txid is
// durable (0: nothing new is). It wakes Views waiting for the fsync.
func (e *Engine) published(txid uint64) {
	if txid > 0 {
		e.durableTx.Store(txid)
	}
	e.syncMu.Lock()
	close(e.synced)
	e.synced = make(chan struct{})
	e.syncMu.Unlock()
}

func (e *Engine) isClosed() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.closed
}
