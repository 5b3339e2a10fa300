package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// pausedTxn runs a two-key transaction on a store in dir that pauses after
// checking its conditions (as a writer stopped for longer than
// StaleTempAge would), runs during, and returns the transaction's error.
func pausedTxn(t *testing.T, s *Store, during func(staged []string)) error {
	t.Helper()
	testHook = func(point string) error {
		if point == "checked" {
			names, err := readDirNames(filepath.Join(s.dir, tmpDir))
			if err != nil {
				t.Error(err)
			}
			during(names)
		}
		return nil
	}
	defer func() { testHook = nil }()
	_, err := s.Txn(context.Background(), []store.TxnOp{
		store.PutOp("a", []byte("new"), store.Unconditional),
		store.PutOp("x/b", []byte("new"), store.Unconditional),
	})
	return err
}

// checkReadable reads a and x/b through a fresh Store: never ErrCorrupt,
// and both show the transaction or neither does.
func checkReadable(t *testing.T, dir string, txnErr error) {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("open after the paused writer: %v", err)
	}
	defer s.Close()
	var got []string
	for _, k := range []string{"a", "x/b"} {
		e, err := s.Get(context.Background(), k)
		switch {
		case errors.Is(err, ErrCorrupt):
			t.Fatalf("get %s: %v", k, err)
		case errors.Is(err, store.ErrNotFound):
			got = append(got, "old")
		case err != nil:
			t.Fatalf("get %s: %v", k, err)
		default:
			got = append(got, string(e.Value))
		}
	}
	if got[0] != got[1] {
		t.Fatalf("the transaction applied in part: %v", got)
	}
	if txnErr == nil && got[0] != "new" {
		t.Fatalf("the transaction succeeded but reads show %v", got)
	}
	if txnErr != nil && got[0] != "old" {
		t.Fatalf("the transaction failed (%v) but reads show %v", txnErr, got)
	}
}

// Another process's cleanup of stale temporary files, run while a writer
// is paused past StaleTempAge between staging and its journal, must not
// take the writer's staged values: before, it removed them, the writer
// then committed a journal naming missing files, and every reader of
// those keys got ErrCorrupt for good (issue 22 item 6).
func TestPausedWriterSurvivesOthersCleanup(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, nil)
	other := open(t, dir, nil)
	old := time.Now().Add(-2 * StaleTempAge)
	txnErr := pausedTxn(t, s, func(staged []string) {
		if len(staged) < 2 {
			t.Errorf("staged files %v", staged)
		}
		for _, n := range staged {
			if err := os.Chtimes(filepath.Join(dir, tmpDir, n), old, old); err != nil {
				t.Error(err)
			}
		}
		other.cleanTemps()
	})
	if txnErr != nil && !errors.Is(txnErr, store.ErrTransient) && !errors.Is(txnErr, store.ErrConflict) {
		t.Fatalf("the resumed writer's commit: %v, want success or a clean failure", txnErr)
	}
	checkReadable(t, dir, txnErr)
}

// Staged files that vanish anyway (removed by hand, or by a cleanup that
// does not know the lock) make the commit fail cleanly, as an aborted
// write: nothing applied, no journal left, readers unaffected.
func TestPausedWriterWhoseStagedFilesVanishAborts(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, nil)
	txnErr := pausedTxn(t, s, func(staged []string) {
		for _, n := range staged {
			if err := os.Remove(filepath.Join(dir, tmpDir, n)); err != nil {
				t.Error(err)
			}
		}
	})
	if !errors.Is(txnErr, store.ErrTransient) {
		t.Fatalf("commit after its staged files vanished: %v, want ErrTransient (nothing happened)", txnErr)
	}
	if names, _ := readDirNames(filepath.Join(dir, txnDir)); len(names) != 0 {
		t.Fatalf("journals left behind: %v", names)
	}
	checkReadable(t, dir, txnErr)
}
