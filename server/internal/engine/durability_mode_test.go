package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fillPastLog writes values into a fresh engine on dir until it has left
// the write-ahead log because latchkey.db outgrew half of the (small)
// memory map opts sets, so that the next Open starts without the log too;
// then it closes the engine.
func fillPastLog(t *testing.T, dir string, opts *Options) {
	t.Helper()
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Mode() != ModeLog {
		t.Fatalf("a fresh engine's Mode() = %q, want %q", e.Mode(), ModeLog)
	}
	value := make([]byte, 16<<10)
	for i := 0; e.Mode() == ModeLog; i++ {
		if i > 10000 {
			t.Fatal("the engine never leaves the log")
		}
		if _, err := e.Update(t.Context(), func(tx *Tx) error {
			tx.PutRecord(Record{Key: fmt.Sprintf("k%05d", i), Data: value})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The mode changes after a commit: one more is handled once it has.
	if _, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: "after-leaving", Data: value})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if e.db.NoSync {
		t.Fatal("left the log while open, bbolt still runs with NoSync")
	}
	st, err := os.Stat(filepath.Join(dir, "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() <= opts.mmapSize/2 {
		t.Fatalf("latchkey.db is %d bytes, not past %d", st.Size(), opts.mmapSize/2)
	}
}

// A database larger than half the log's memory map is reopened without the
// log; every commit must then be fsynced by bbolt itself. Before, Open
// decided bbolt's NoSync while it still meant to use the log and then
// turned the log off: every later write was acknowledged with no fsync at
// all (issue 23 item 6).
func TestReopenPastLogThresholdStillSyncs(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{mmapSize: 1 << 20}
	fillPastLog(t, dir, opts)

	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.log != nil {
		t.Fatal("reopened past the threshold, the engine still uses the log")
	}
	if e.Mode() != ModeFsync {
		t.Errorf("Mode() = %q, want %q", e.Mode(), ModeFsync)
	}
	if e.db.NoSync {
		t.Fatal("reopened past the threshold without the log, bbolt runs with NoSync: acknowledged writes are not fsynced")
	}
	if _, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: "after", Data: []byte("v")})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
