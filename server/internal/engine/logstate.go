package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
)

// logState is an engine's write-ahead log and checkpoints (wal.go,
// checkpoint.go). The writer goroutine owns files, active, seq and
// lastCkpt; mu guards what the checkpointer goroutine shares.
type logState struct {
	files    [2]*logFile
	active   int
	seq      uint64 // the last record appended
	lastCkpt time.Time
	dbFile   *os.File // latchkey.db, read-only: bbolt's meta pages
	pageSize int
	dbSize   int64        // bbolt's size at the last commit
	leaveAt  atomic.Int64 // leave the log once bbolt's size passes this (walMmapSize/2)
	rec      walBatch     // the record being built, its buffer reused

	mu   sync.Mutex
	busy bool      // a checkpoint is in flight: the inactive file is still needed
	pin  *bbolt.Tx // read transaction at the last saved checkpoint
	slot int       // the slot of the last saved checkpoint
	idle *sync.Cond

	jobs    chan ckptJob
	stopped chan struct{} // closed when the checkpointer exits
}

type ckptJob struct {
	rtx  *bbolt.Tx // at c.txid: pins its tree
	c    checkpoint
	slot int
}

// Crash points (tests): crashHook is called with these names.
const (
	crashLogged      = "logged"       // record fdatasynced, bbolt not yet committed
	crashApplied     = "applied"      // bbolt committed (unsynced) after the record, not yet acknowledged
	crashCkptSynced  = "ckpt-synced"  // checkpoint: bbolt synced, slot not yet saved
	crashCkptSaved   = "ckpt-saved"   // checkpoint saved, pin not yet moved, log not yet reused
	crashReplayed    = "replayed"     // Open: records replayed into bbolt, not yet checkpointed
	crashAppendWrote = "append-wrote" // record written, not yet fdatasynced
)

func (e *Engine) crashPoint(name string) {
	if e.opts.crashHook != nil {
		e.opts.crashHook(name)
	}
}

// keyLogSeq in the meta bucket is the seq of the last log record the
// bbolt state includes.
var keyLogSeq = []byte("logseq")

// restoreCheckpoint brings the bbolt file at dbPath back to dir's newest
// checkpoint before bbolt opens it (see checkpoint.go) and returns that
// checkpoint's slot (-1: there is none, bbolt's file is used as it is).
func restoreCheckpoint(dir, dbPath string) (int, error) {
	ck, slot, err := loadCheckpoint(dir)
	if errors.Is(err, errNoCheckpoint) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	if err := restoreMeta(dbPath, ck); err != nil {
		return -1, err
	}
	return slot, nil
}

// replay applies, in btx, every log record after the one bbolt includes,
// and returns the seq of the last record bbolt then includes and how many
// it applied. Open runs it in the transaction that follows the checkpoint
// restore, so a crash before that transaction is checkpointed changes
// nothing.
func (e *Engine) replay(btx *bbolt.Tx) (uint64, int, error) {
	meta := btx.Bucket(bucketMeta)
	applied := getU64(meta.Get(keyLogSeq))
	var files [][]walRecord
	for n := range 2 {
		recs, _, err := readLogFile(e.dir, n)
		if err != nil {
			return 0, 0, err
		}
		files = append(files, recs)
	}
	recs := replayable(files, applied)
	for _, r := range recs {
		for _, op := range r.ops {
			b, err := btx.CreateBucketIfNotExists([]byte(op.bucket))
			if err != nil {
				return 0, 0, fmt.Errorf("engine: replay log: %w", err)
			}
			switch op.kind {
			case opPut:
				err = b.Put(op.key, op.value)
			case opDel:
				err = b.Delete(op.key)
			}
			if err != nil {
				return 0, 0, fmt.Errorf("engine: replay log: %w", err)
			}
		}
		applied = r.seq
	}
	if err := meta.Put(keyLogSeq, u64(applied)); err != nil {
		return 0, 0, fmt.Errorf("engine: replay log: %w", err)
	}
	return applied, len(recs), nil
}

// openLog starts the log after Open's replay: it saves a checkpoint of
// everything bbolt holds (seq is its last record), so both log files are
// free. slot is the restored checkpoint's (-1: none).
func (e *Engine) openLog(seq uint64, slot int) error {
	l := &logState{seq: seq, slot: slot, pageSize: e.db.Info().PageSize,
		jobs: make(chan ckptJob), stopped: make(chan struct{}), lastCkpt: time.Now()}
	l.idle = sync.NewCond(&l.mu)
	l.leaveAt.Store(e.opts.mmapSize / 2)
	e.log = l
	if err := os.MkdirAll(walDir(e.dir), 0o700); err != nil {
		return fmt.Errorf("engine: log dir: %w", err)
	}
	f, err := os.Open(filepath.Join(e.dir, "latchkey.db"))
	if err != nil {
		return fmt.Errorf("engine: open: %w", err)
	}
	l.dbFile = f
	for n := range 2 {
		lf, err := openLogFile(e.dir, n, e.opts.LogBytes)
		if err != nil {
			return err
		}
		l.files[n] = lf
		// Both checkpoint slots exist before any is needed, so saving one
		// never creates a name that a directory sync would have to cover.
		// They are zero-filled to their full size (zeros are no valid
		// checkpoint), so saving one needs no new space on a full disk.
		if err := presizeSlot(e.dir, n, ckptHeader+l.pageSize); err != nil {
			return err
		}
	}
	if err := syncDir(walDir(e.dir)); err != nil {
		return err
	}
	if err := e.db.Sync(); err != nil {
		return fmt.Errorf("engine: sync: %w", err)
	}
	job, err := e.checkpointJob()
	if err != nil {
		return err
	}
	if err := saveCheckpoint(e.dir, job.slot, job.c); err != nil {
		job.rtx.Rollback()
		return err
	}
	l.pin, l.slot = job.rtx, job.slot
	go e.checkpointer(l)
	return nil
}

// checkpointJob pins the last commit and reads its meta page. The writer
// calls it when no commit is in flight.
func (e *Engine) checkpointJob() (ckptJob, error) {
	l := e.log
	rtx, err := e.db.Begin(false)
	if err != nil {
		return ckptJob{}, fmt.Errorf("engine: checkpoint: %w", err)
	}
	txid := uint64(rtx.ID())
	page, err := readMetaPage(l.dbFile, l.pageSize, txid)
	if err != nil {
		rtx.Rollback()
		return ckptJob{}, err
	}
	slot := 0
	if l.slot >= 0 {
		slot = l.slot ^ 1
	}
	return ckptJob{rtx: rtx, c: checkpoint{seq: l.seq, txid: txid, page: page}, slot: slot}, nil
}

// commitLogged is a commit with the log: the batch is applied in a bbolt
// write transaction, its record appended to the log and fdatasynced, and
// only then is the transaction committed to bbolt (without a sync), which
// is what shows it to readers. So a reader never finds a commit whose
// record is not yet durable, and Views do not wait for the log's fsync
// (bbolt serves them from the last commit while the write transaction is
// open). The caller publishes the commit once this returns.
//
// If bbolt's commit fails after the record is durable, the record is
// withdrawn (its frame header zeroed and synced), so that the next Open
// does not replay a batch whose members were told it failed.
func (e *Engine) commitLogged(batch []*request) (done []applied, failed *request, txid uint64, err error) {
	l := e.log
	btx, err := e.db.Begin(true)
	if err != nil {
		return nil, nil, 0, err
	}
	txid = uint64(btx.ID())
	l.dbSize = btx.Size()
	rec := &l.rec
	rec.reset()
	seq := l.seq + 1
	done, failed, err = e.apply(btx, batch, rec)
	if err == nil {
		err = btx.Bucket(bucketMeta).Put(keyLogSeq, u64(seq))
	}
	if err != nil {
		btx.Rollback()
		return done, failed, txid, err
	}
	lf := l.files[l.active]
	at := lf.off
	if e.appendFault != nil {
		if err := e.appendFault(); err != nil {
			btx.Rollback()
			return nil, nil, txid, fmt.Errorf("engine: write log: %w", err)
		}
	}
	if err := lf.append(rec.frame(seq), func() { e.crashPoint(crashAppendWrote) }); err != nil {
		btx.Rollback()
		return nil, nil, txid, err
	}
	if e.syncFault != nil {
		if err := e.syncFault(); err != nil {
			btx.Rollback()
			return nil, nil, txid, err
		}
	}
	e.crashPoint(crashLogged)
	if err := btx.Commit(); err != nil {
		if werr := lf.withdraw(at); werr != nil {
			err = fmt.Errorf("%w (and withdrawing its log record: %w)", err, werr)
		}
		return nil, nil, txid, err
	}
	l.seq = seq
	e.crashPoint(crashApplied)
	return done, nil, txid, nil
}

// leaveLog ends the log for the rest of the engine's life, when bbolt's
// file nears its memory map (the checkpoint's open read transaction would
// make the remap that growing past it needs wait forever). bbolt is synced,
// the checkpoint slots then the log files removed (a crash after that opens
// bbolt's own, synced, state), the read transaction released, and every
// later commit syncs itself. Open uses the log only while the file is
// below half of walMmapSize.
func (e *Engine) leaveLog() error {
	l := e.log
	l.stop()
	if err := e.db.Sync(); err != nil {
		return fmt.Errorf("engine: leave log: %w", err)
	}
	for _, p := range []string{ckptPath(e.dir, 0), ckptPath(e.dir, 1)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("engine: leave log: %w", err)
		}
	}
	if err := syncDir(walDir(e.dir)); err != nil {
		return err
	}
	l.pin.Rollback()
	for _, lf := range l.files {
		lf.close()
	}
	l.dbFile.Close()
	if err := os.RemoveAll(walDir(e.dir)); err != nil {
		return fmt.Errorf("engine: leave log: %w", err)
	}
	// Not needed for recovery (a log left behind holds no record past
	// bbolt's logseq), but the directory should say what the engine does.
	if err := syncDir(e.dir); err != nil {
		return fmt.Errorf("engine: leave log: %w", err)
	}
	e.log = nil
	e.db.NoSync = false
	return e.setMode(ModeFsync)
}

// maybeCheckpoint starts a checkpoint after a commit when the active log
// file holds LogBytes/2 or the last one started CheckpointInterval ago,
// unless one is in flight. It switches the writer to the other log file,
// whose records the last saved checkpoint covers.
func (e *Engine) maybeCheckpoint() {
	l := e.log
	if e.Err() != nil {
		return
	}
	if l.dbSize > l.leaveAt.Load() {
		if err := e.leaveLog(); err != nil {
			e.fail(err)
		}
		return
	}
	if l.files[l.active].off < e.opts.LogBytes/2 && time.Since(l.lastCkpt) < e.opts.CheckpointInterval {
		return
	}
	l.mu.Lock()
	busy := l.busy
	l.mu.Unlock()
	if busy {
		return
	}
	job, err := e.checkpointJob()
	if err != nil {
		e.fail(err)
		return
	}
	l.mu.Lock()
	l.busy = true
	l.mu.Unlock()
	l.active ^= 1
	l.files[l.active].reset()
	l.lastCkpt = time.Now()
	l.jobs <- job
}

// checkpointer saves the checkpoints the writer starts: bbolt's file is
// fdatasynced (everything committed before the job, its meta page
// included, is then durable), the job's meta page saved in the other
// slot, and the pin moved to it.
func (e *Engine) checkpointer(l *logState) {
	defer close(l.stopped)
	for job := range l.jobs {
		err := e.db.Sync()
		if err == nil {
			e.crashPoint(crashCkptSynced)
			err = saveCheckpoint(e.dir, job.slot, job.c)
		}
		if err == nil {
			e.crashPoint(crashCkptSaved)
		}
		if err != nil {
			// Before busy clears: the writer must not reuse the log file
			// this checkpoint would have freed.
			e.fail(fmt.Errorf("checkpoint: %w", err))
		}
		l.mu.Lock()
		old := job.rtx
		if err == nil {
			old, l.pin, l.slot = l.pin, job.rtx, job.slot
		}
		l.busy = false
		l.idle.Broadcast()
		l.mu.Unlock()
		old.Rollback()
	}
}

// closeLog ends the checkpointer and, unless the engine failed, saves a
// last checkpoint, so the next Open replays nothing. It releases the pin
// (bbolt's Close waits for every read transaction).
func (e *Engine) closeLog() error {
	l := e.log
	l.stop()
	var err error
	if e.Err() == nil {
		if err = e.db.Sync(); err == nil {
			var job ckptJob
			if job, err = e.checkpointJob(); err == nil {
				err = saveCheckpoint(e.dir, job.slot, job.c)
				job.rtx.Rollback()
			}
		}
	}
	l.pin.Rollback()
	for _, lf := range l.files {
		lf.close()
	}
	l.dbFile.Close()
	return err
}

// stop waits for the checkpoint in progress, if any, and ends the
// checkpointer.
func (l *logState) stop() {
	l.mu.Lock()
	for l.busy {
		l.idle.Wait()
	}
	l.mu.Unlock()
	close(l.jobs)
	<-l.stopped
}

// abandon releases what openLog took when Open fails.
func (l *logState) abandon() {
	if l.pin != nil {
		l.pin.Rollback()
	}
	for _, lf := range l.files {
		if lf != nil {
			lf.close()
		}
	}
	if l.dbFile != nil {
		l.dbFile.Close()
	}
}

// presizeSlot creates checkpoint slot n, zero-filled to size, unless it
// is that large already.
func presizeSlot(dir string, n, size int) error {
	f, err := os.OpenFile(ckptPath(dir, n), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("engine: checkpoint slot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("engine: checkpoint slot: %w", err)
	}
	if st.Size() >= int64(size) {
		return nil
	}
	if _, err := f.WriteAt(make([]byte, size-int(st.Size())), st.Size()); err != nil {
		return fmt.Errorf("engine: checkpoint slot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("engine: checkpoint slot: %w", err)
	}
	return nil
}
