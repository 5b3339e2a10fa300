package engine

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/latchkey/latchkey/internal/optcheck"
)

// Defaults used where Options leaves a field zero.
const (
	// DefaultTombstoneTTL is Options.TombstoneTTL when zero: Consul's
	// default.
	DefaultTombstoneTTL = 15 * time.Minute
	// DefaultLogBytes is Options.LogBytes when zero.
	DefaultLogBytes = 4 << 20
	// DefaultCheckpointInterval is Options.CheckpointInterval when zero.
	DefaultCheckpointInterval = time.Second
)

// Options tune an Engine. A nil *Options and every zero field mean the
// defaults; negative values are an error.
type Options struct {
	// OnCommit, when set, is called after every durable commit with the
	// number of Updates the commit carried and how long the commit
	// (including fsync) took. It must be fast; the server feeds metrics
	// from it.
	OnCommit func(updates int, d time.Duration)

	// LiveBlobs, when set, enables the orphan-blob sweep at Open: it is
	// called once in a read transaction and must call live(id) for every
	// blob id that a committed record references. Every file in dir/blobs
	// not named that way is removed. When nil, committed blobs are never
	// swept (only dir/blobs/tmp, which never holds a referenced blob).
	LiveBlobs func(tx *Tx, live func(id string)) error

	// TombstoneTTL is how long the tombstone of a deleted key is kept.
	// Tombstones let KeysIndex of a prefix move forward when a key under it
	// is deleted; a reaped one leaves its index behind as a floor under
	// every prefix, so indexes never go backwards (a blocking list may
	// return once, early, after a reap). Zero means DefaultTombstoneTTL;
	// reaping runs every TTL/4, at most 10000 tombstones per pass.
	TombstoneTTL time.Duration

	// LogBytes is the size each of the two write-ahead log files is
	// zero-filled to, so that appends overwrite allocated blocks (see
	// wal.go). A checkpoint starts once the active file holds LogBytes/2
	// of records; records never wait for one: a file that fills up before
	// its checkpoint is done grows. So the log holds at most about two
	// checkpoints' worth of records, LogBytes each. Zero means
	// DefaultLogBytes (4 MiB: 8 MiB of disk for both files).
	LogBytes int64

	// CheckpointInterval bounds the time between checkpoints while
	// commits arrive: after a commit, a checkpoint starts if the last one
	// started this long ago. A checkpoint costs two fdatasyncs in the
	// background (bbolt's file, the checkpoint slot); between checkpoints
	// bbolt cannot reuse pages freed since the last one, so a longer
	// interval grows the file more under write load. Zero means
	// DefaultCheckpointInterval.
	CheckpointInterval time.Duration

	// NoSync disables fsync, and with it the write-ahead log. Tests only:
	// it voids the durability promise.
	NoSync bool

	// Logger receives the engine's few messages: the durability mode it
	// opened in and any change of it (see Mode). Nil discards them.
	Logger *slog.Logger

	// noLog commits with bbolt's own fsyncs instead of the log (tests and
	// benchmarks compare the two).
	noLog bool

	// crashHook, when set, is called at the log's crash points (tests).
	crashHook func(point string)

	// maxSize caps the database file (bbolt's MaxSize); tests use it to
	// make a commit fail for real.
	maxSize int

	// mmapSize replaces walMmapSize (tests): the log's memory map, half
	// of which is the size past which the engine leaves the log.
	mmapSize int64
}

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// the defaults, or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(
		optcheck.Named("TombstoneTTL", r.TombstoneTTL), optcheck.Named("LogBytes", r.LogBytes),
		optcheck.Named("CheckpointInterval", r.CheckpointInterval),
	); err != nil {
		return r, fmt.Errorf("engine: %w", err)
	}
	r.TombstoneTTL = cmp.Or(r.TombstoneTTL, DefaultTombstoneTTL)
	r.LogBytes = cmp.Or(r.LogBytes, DefaultLogBytes)
	r.CheckpointInterval = cmp.Or(r.CheckpointInterval, DefaultCheckpointInterval)
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r.mmapSize = cmp.Or(r.mmapSize, walMmapSize)
	return r, nil
}
