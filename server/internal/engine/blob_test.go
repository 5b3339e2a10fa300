package engine

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeBlob(t *testing.T, e *Engine, body string) string {
	t.Helper()
	w, err := e.NewBlob()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	id, size, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(body)) {
		t.Fatalf("size %d, want %d", size, len(body))
	}
	return id
}

func TestBlobLifecycle(t *testing.T) {
	e := openT(t, t.TempDir())
	id := writeBlob(t, e, "hello blob")
	f, err := e.OpenBlob(id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello blob" {
		t.Fatalf("read %q", b)
	}
	if err := e.RemoveBlob(id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.OpenBlob(id); err == nil {
		t.Fatal("removed blob still opens")
	}
	if err := e.RemoveBlob(id); err != nil {
		t.Fatalf("removing a missing blob: %v", err)
	}
	for _, bad := range []string{"../LOCK", "tmp", "", strings.Repeat("g", 32)} {
		if _, err := e.OpenBlob(bad); err == nil {
			t.Errorf("OpenBlob(%q) accepted", bad)
		}
	}
}

func TestBlobAbortLeavesNothing(t *testing.T) {
	e := openT(t, t.TempDir())
	w, err := e.NewBlob()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("partial"))
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	ents, _ := os.ReadDir(e.tmpDir())
	if len(ents) != 0 {
		t.Fatalf("tmp holds %d files after Abort", len(ents))
	}
}

// At Open, blobs/tmp is emptied and, with LiveBlobs, every committed blob
// no record names is removed; named ones stay.
func TestOrphanBlobsSweptAtOpen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := writeBlob(t, e, "referenced")
	orphan := writeBlob(t, e, "never adopted")
	if _, err := e.Update(t.Context(), func(tx *Tx) error {
		return tx.Bucket("objects").Put([]byte("obj"), []byte(live))
	}); err != nil {
		t.Fatal(err)
	}
	half, _ := e.NewBlob() // a crash mid-upload leaves this in tmp
	half.Write([]byte("half"))
	t.Cleanup(func() { half.f.Close() })
	e.Close()

	liveBlobs := func(tx *Tx, yield func(string)) error {
		if b := tx.Bucket("objects"); b != nil {
			return b.ForEach(func(_, v []byte) error { yield(string(v)); return nil })
		}
		return nil
	}
	e, err = Open(dir, &Options{LiveBlobs: liveBlobs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := os.Stat(filepath.Join(dir, "blobs", live)); err != nil {
		t.Errorf("live blob swept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", orphan)); !os.IsNotExist(err) {
		t.Errorf("orphan blob kept: %v", err)
	}
	if ents, _ := os.ReadDir(e.tmpDir()); len(ents) != 0 {
		t.Errorf("blobs/tmp not emptied: %d files", len(ents))
	}
}

// After a commit fails at its fsync (EIO), the record that names a blob may
// be on disk anyway. The caller, told ErrFailed, removes the blob as it
// removes any blob of a failed write; the engine must keep it and leave
// the decision to the orphan sweep at the next Open, which reclaims the
// blob only if the record did not land. Injected: the commit's writes
// reach the file, then the fsync reports EIO.
func TestBlobOfFailedFsyncSurvivesRemove(t *testing.T) {
	dir := t.TempDir()
	liveRefs := &Options{NoSync: true, LiveBlobs: func(tx *Tx, live func(string)) error {
		if b := tx.ReadBucket("refs"); b != nil {
			return b.ForEach(func(k, _ []byte) error { live(string(k)); return nil })
		}
		return nil
	}}
	e, err := Open(dir, liveRefs)
	if err != nil {
		t.Fatal(err)
	}
	landed := writeBlob(t, e, "named by a record that landed")
	orphan := writeBlob(t, e, "named by nothing")
	e.syncFault = func() error { return syscall.EIO }
	_, err = e.Update(t.Context(), func(tx *Tx) error {
		tx.Touch("refs")
		return tx.Bucket("refs").Put([]byte(landed), []byte{1})
	})
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("update with a failing fsync: %v, want ErrFailed (EIO)", err)
	}
	for _, id := range []string{landed, orphan} { // what s3api does with the blobs of a failed write
		if err := e.RemoveBlob(id); err != nil {
			t.Fatalf("RemoveBlob after the failure: %v", err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, liveRefs)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.View(func(tx *Tx) error {
		if tx.ReadBucket("refs").Get([]byte(landed)) == nil {
			t.Fatal("test setup: the record did not land")
		}
		return nil
	})
	f, err := e.OpenBlob(landed)
	if err != nil {
		t.Fatalf("the blob of a record that landed is gone: %v", err)
	}
	f.Close()
	if _, err := e.OpenBlob(orphan); err == nil {
		t.Fatal("the sweep at Open kept a blob no record names")
	}
}
