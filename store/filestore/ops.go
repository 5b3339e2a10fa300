package filestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/store"
)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	f, h, err := s.openLocked(ctx, "get", key)
	if err != nil {
		return store.Entry{}, err
	}
	defer f.Close()
	val := make([]byte, h.length)
	if _, err := f.ReadAt(val, h.size); err != nil {
		return store.Entry{}, opErr("get", key, store.ErrTransient, err)
	}
	return store.Entry{Key: key, Value: val, Version: formatVersionString(h.version)}, nil
}

// GetStream implements store.Streamer. The reader reads the value file that
// was current when GetStream returned; later writes replace the file by
// rename and never touch its bytes, so the reader yields exactly the
// returned version's value however long it is read.
func (s *Store) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	f, h, err := s.openLocked(ctx, "get", key)
	if err != nil {
		return nil, "", err
	}
	return &valueReader{SectionReader: io.NewSectionReader(f, h.size, int64(h.length)), f: f},
		formatVersionString(h.version), nil
}

type valueReader struct {
	*io.SectionReader
	f *os.File
}

func (r *valueReader) Close() error { return r.f.Close() }

// openLocked opens key's value file under its stripe lock (shared), so that
// it never sees half of a transaction. Once open, the file is immutable and
// the lock is not needed to read it.
func (s *Store) openLocked(ctx context.Context, op, key string) (*os.File, header, error) {
	if err := s.begin(ctx, store.Guard, op, key); err != nil {
		return nil, header{}, err
	}
	defer s.inflight.Done()
	unlock, err := s.lock(ctx, s.sortedStripes(key), false)
	if err != nil {
		return nil, header{}, opErr(op, key, store.ErrTransient, err)
	}
	f, h, err := s.openValue(key)
	unlock()
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, header{}, store.NewOpError(backend, op, key, store.ErrNotFound, nil)
	case err != nil:
		return nil, header{}, opErr(op, key, store.ErrTransient, err)
	}
	return f, h, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	return s.put(ctx, key, bytes.NewReader(value), int64(len(value)), cond)
}

// PutStream implements store.Streamer: r is copied into a staged file,
// which is fsynced before the key is locked; the condition is checked and
// the file published under the lock.
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	return s.put(ctx, key, r, -1, cond)
}

// put stages the value outside any lock (the slow part: write and fsync),
// then locks the key's stripe, checks cond and publishes.
func (s *Store) put(ctx context.Context, key string, r io.Reader, size int64, cond store.Condition) (store.Version, error) {
	const op = "put"
	if err := s.begin(ctx, store.Guard, op, key); err != nil {
		return "", err
	}
	defer s.inflight.Done()
	v, err := s.newVersion(ctx)
	if err != nil {
		return "", opErr(op, key, store.ErrTransient, err)
	}
	staged, release, err := s.stage(ctx, key, v, r, size)
	if err != nil {
		return "", opErr(op, key, store.ErrTransient, err)
	}
	defer release()
	defer os.Remove(staged) // a no-op once published by rename
	if err := s.ensureBucket(key); err != nil {
		return "", opErr(op, key, store.ErrTransient, err)
	}
	unlock, err := s.lock(ctx, s.sortedStripes(key), true)
	if err != nil {
		return "", opErr(op, key, store.ErrTransient, err)
	}
	defer unlock()
	published, err := s.publish(key, staged, cond)
	switch {
	case errors.Is(err, store.ErrConflict):
		return "", store.NewOpError(backend, op, key, store.ErrConflict, nil)
	case err != nil && published:
		s.notify()
		return "", opErr(op, key, store.ErrUnknownOutcome, err)
	case err != nil:
		return "", opErr(op, key, store.ErrTransient, err)
	}
	s.notify()
	return formatVersionString(v), nil
}

// publish makes the staged file key's value if cond holds. The caller
// holds key's stripe exclusively. IfAbsent publishes by link(2), which
// fails if the name exists, so it is atomic even apart from the lock;
// other conditions read the current version and rename over it. published
// reports whether the value may be visible (an error after that point
// leaves the outcome unknown).
func (s *Store) publish(key, staged string, cond store.Condition) (published bool, err error) {
	target := s.valuePath(key)
	if cond.IsAbsent() {
		err := os.Link(staged, target)
		if errors.Is(err, os.ErrExist) {
			return false, store.ErrConflict
		}
		if err == nil {
			return true, s.syncDir(filepath.Dir(target))
		}
		// No hard links here (some FUSE and network filesystems): the
		// check-and-rename below is atomic too, under the flock we hold.
	}
	if !cond.IsUnconditional() { // an overwrite need not read (nor parse) the old file
		exists, cur, err := s.current(key)
		if err != nil {
			return false, err
		}
		if !cond.Holds(exists, formatVersionString(cur)) {
			return false, store.ErrConflict
		}
	}
	if err := os.Rename(staged, target); err != nil {
		return false, err
	}
	return true, s.syncDir(filepath.Dir(target))
}

// stage writes key's value file, header and all, under tmp/ and fsyncs
// it. size is the value's length, or -1 when it is known only at EOF (the
// header's length field is patched then). It returns the file's path and
// release, which the caller calls once the file is published or given up:
// until then the file stays open with a shared flock(2) on it, which tells
// cleanTemps (in any process) that a live writer owns it however long that
// writer is paused.
func (s *Store) stage(ctx context.Context, key string, version uint64, r io.Reader, size int64) (path string, release func(), err error) {
	f, err := createTemp(filepath.Join(s.dir, tmpDir), "v-")
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := flock(int(f.Fd()), false, true); err != nil {
		return "", nil, err
	}
	if err := hook("stage"); err != nil {
		return "", nil, err
	}
	if _, err := f.Write(encodeHeader(key, version, uint64(max(size, 0)))); err != nil {
		return "", nil, err
	}
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err != nil {
		return "", nil, err
	}
	if size < 0 {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		if _, err := f.WriteAt(b[:], lengthOff); err != nil {
			return "", nil, err
		}
	} else if n != size {
		return "", nil, io.ErrUnexpectedEOF
	}
	if err := s.syncFile(f); err != nil {
		return "", nil, err
	}
	return f.Name(), func() { f.Close() }, nil
}

// ctxReader stops a copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	const op = "delete"
	if cond.IsAbsent() {
		return store.NewOpError(backend, op, key, store.ErrUnsupported, nil)
	}
	if err := s.begin(ctx, store.Guard, op, key); err != nil {
		return err
	}
	defer s.inflight.Done()
	unlock, err := s.lock(ctx, s.sortedStripes(key), true)
	if err != nil {
		return opErr(op, key, store.ErrTransient, err)
	}
	defer unlock()
	if !cond.IsUnconditional() {
		exists, cur, err := s.current(key)
		if err != nil {
			return opErr(op, key, store.ErrTransient, err)
		}
		if !cond.Holds(exists, formatVersionString(cur)) {
			return store.NewOpError(backend, op, key, store.ErrConflict, nil)
		}
	}
	target := s.valuePath(key)
	err = os.Remove(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Absent already; sync anyway in case a crashed process's unlink
		// is not durable yet, since our success promises it is.
		if err := s.syncDir(filepath.Dir(target)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return opErr(op, key, store.ErrTransient, err)
		}
		return nil
	case err != nil:
		return opErr(op, key, store.ErrTransient, err)
	}
	s.notify()
	if err := s.syncDir(filepath.Dir(target)); err != nil {
		return opErr(op, key, store.ErrUnknownOutcome, err)
	}
	return nil
}
