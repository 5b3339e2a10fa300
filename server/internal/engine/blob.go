package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/latchkey/latchkey/internal/fsutil"
	"go.etcd.io/bbolt"
)

// Blobs hold large bodies (S3 objects) outside bbolt. The life of one:
//
//  1. NewBlob creates a temporary file in dir/blobs/tmp; the caller streams
//     the body into it.
//  2. Commit fsyncs it and renames it to dir/blobs/<id> (and fsyncs the
//     directory), so the bytes are durable before any record names them.
//  3. An Update stores the id in a record: the blob is now live.
//  4. When a committed Update drops the last reference, the caller calls
//     RemoveBlob.
//
// A crash between 2 and 3, or between 4's commit and RemoveBlob, leaves an
// orphan: a file no record names; so does a failed commit, after which
// RemoveBlob deletes nothing (the record may have landed). At Open, dir/blobs/tmp is emptied and,
// when Options.LiveBlobs is set, every file in dir/blobs it does not name
// is removed.

func (e *Engine) blobDir() string { return filepath.Join(e.dir, "blobs") }
func (e *Engine) tmpDir() string  { return filepath.Join(e.dir, "blobs", "tmp") }

// BlobWriter streams one new blob to disk.
type BlobWriter struct {
	e    *Engine
	f    *os.File
	size int64
	done bool
}

// NewBlob starts a new blob.
func (e *Engine) NewBlob() (*BlobWriter, error) {
	if err := os.MkdirAll(e.tmpDir(), 0o700); err != nil {
		return nil, fmt.Errorf("engine: blob dir: %w", err)
	}
	f, err := os.CreateTemp(e.tmpDir(), "blob-*")
	if err != nil {
		return nil, fmt.Errorf("engine: new blob: %w", err)
	}
	return &BlobWriter{e: e, f: f}, nil
}

// Write appends p to the blob.
func (w *BlobWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// Size is the number of bytes written so far.
func (w *BlobWriter) Size() int64 { return w.size }

// Commit makes the blob durable under a fresh id and returns the id and
// size. The blob is an orphan until a committed Update references it.
func (w *BlobWriter) Commit() (id string, size int64, err error) {
	if w.done {
		return "", 0, errors.New("engine: blob already committed or aborted")
	}
	w.done = true
	defer func() {
		if err != nil {
			os.Remove(w.f.Name())
		}
	}()
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return "", 0, fmt.Errorf("engine: sync blob: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return "", 0, fmt.Errorf("engine: close blob: %w", err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	if err := os.Rename(w.f.Name(), filepath.Join(w.e.blobDir(), id)); err != nil {
		return "", 0, fmt.Errorf("engine: adopt blob: %w", err)
	}
	if err := syncDir(w.e.blobDir()); err != nil {
		return "", 0, err
	}
	return id, w.size, nil
}

// Abort discards an uncommitted blob. It is safe after Commit (no-op).
func (w *BlobWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	return os.Remove(w.f.Name())
}

// OpenBlob opens a committed blob for reading.
func (e *Engine) OpenBlob(id string) (*os.File, error) {
	if !validBlobID(id) {
		return nil, fmt.Errorf("engine: open blob %q: invalid id", id)
	}
	f, err := os.Open(filepath.Join(e.blobDir(), id))
	if err != nil {
		return nil, fmt.Errorf("engine: open blob: %w", err)
	}
	return f, nil
}

// RemoveBlob deletes a blob once no committed record references it. A
// missing blob is not an error.
//
// After a commit failed (Err is not nil) RemoveBlob keeps the file and
// returns nil: a failed fsync (EIO) does not say whether the commit's
// records reached the disk, so the blob of a write answered ErrFailed may
// be named by a record that did land. The orphan sweep at the next Open
// decides from the records that are there.
func (e *Engine) RemoveBlob(id string) error {
	if !validBlobID(id) {
		return fmt.Errorf("engine: remove blob %q: invalid id", id)
	}
	if e.Err() != nil {
		return nil
	}
	err := os.Remove(filepath.Join(e.blobDir(), id))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("engine: remove blob: %w", err)
	}
	return nil
}

func validBlobID(id string) bool {
	if len(id) != 32 {
		return false
	}
	return strings.Trim(id, "0123456789abcdef") == ""
}

// syncDir makes dir's entries durable (see internal/fsutil).
func syncDir(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// sweepBlobs runs at Open: empties blobs/tmp and, with Options.LiveBlobs,
// removes committed blobs no record names.
func (e *Engine) sweepBlobs() error {
	if err := os.RemoveAll(e.tmpDir()); err != nil {
		return fmt.Errorf("engine: sweep blob tmp: %w", err)
	}
	if err := os.MkdirAll(e.tmpDir(), 0o700); err != nil {
		return fmt.Errorf("engine: blob dir: %w", err)
	}
	// blobs/ may be new: its entry in the data directory is synced by
	// Open; tmp/ in it is only ever a staging area.
	if e.opts.LiveBlobs == nil {
		return nil
	}
	live := make(map[string]bool)
	err := e.db.View(func(btx *bbolt.Tx) error {
		tx := &Tx{btx: btx, index: getU64(btx.Bucket(bucketMeta).Get(keyIndex))}
		return e.opts.LiveBlobs(tx, func(id string) { live[id] = true })
	})
	if err != nil {
		return fmt.Errorf("engine: live blobs: %w", err)
	}
	ents, err := os.ReadDir(e.blobDir())
	if err != nil {
		return fmt.Errorf("engine: sweep blobs: %w", err)
	}
	for _, ent := range ents {
		if ent.IsDir() || !validBlobID(ent.Name()) || live[ent.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(e.blobDir(), ent.Name())); err != nil {
			return fmt.Errorf("engine: sweep blob: %w", err)
		}
	}
	return nil
}
