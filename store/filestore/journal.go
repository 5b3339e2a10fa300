package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A transaction that writes more than one key is made crash-safe by a
// journal: after locking its stripes and checking its conditions, it
// writes txn/j-<stripe bitmap>-<random> (fsynced, published by rename,
// directory fsynced), which lists each key with either the staged file
// that becomes its value (already fsynced under tmp/) or nothing (delete).
// Then it applies the operations, fsyncs the touched directories, removes
// the journal and fsyncs txn/ before unlocking. Once the journal exists the
// transaction has committed: if its process dies, the next process to lock
// any of its stripes (or to Open or List) finishes it. Applying is
// idempotent: a put whose key already has the journal's version was done.
const journalPrefix = "j-"

type journal struct {
	Ops []journalOp `json:"ops"`
}

type journalOp struct {
	Key     string `json:"key"`
	Staged  string `json:"staged,omitempty"`  // name under tmp/ of the new value file; empty: delete
	Version uint64 `json:"version,omitempty"` // the new value's version
}

// testHook, when set by a test, is called at named points of a
// transaction ("committed", "applied 0", ...) to crash or pause there, and
// before each file-system step of a write ("stage", "sync file", "sync
// dir", "mkdir", "rename", "remove"): an error it returns is that step's
// error, as if the disk had answered ENOSPC or EIO.
var testHook func(point string) error

func hook(point string) error {
	if testHook != nil {
		return testHook(point)
	}
	return nil
}

func stripeBits(stripes []int) uint64 {
	var b uint64
	for _, i := range stripes {
		b |= 1 << i
	}
	return b
}

// journalStripes parses the stripe bitmap out of a journal's name.
func journalStripes(name string) ([]int, uint64, error) {
	rest, ok := strings.CutPrefix(name, journalPrefix)
	hexBits, _, ok2 := strings.Cut(rest, "-")
	b, err := strconv.ParseUint(hexBits, 16, 64)
	if !ok || !ok2 || err != nil || b == 0 {
		return nil, 0, fmt.Errorf("%w: journal name %q", ErrCorrupt, name)
	}
	var out []int
	for x := b; x != 0; x &= x - 1 {
		out = append(out, bits.TrailingZeros64(x))
	}
	return out, b, nil
}

// pendingJournal returns the name of a journal naming any of stripes, or
// "". The caller holds those stripes, so such a journal is a dead one.
func (s *Store) pendingJournal(stripes []int) (string, error) {
	names, err := readDirNames(filepath.Join(s.dir, txnDir))
	if err != nil {
		return "", err
	}
	mine := stripeBits(stripes)
	for _, n := range names {
		if !strings.HasPrefix(n, journalPrefix) {
			continue
		}
		_, b, err := journalStripes(n)
		if err != nil {
			return "", err
		}
		if b&mine != 0 {
			return n, nil
		}
	}
	return "", nil
}

// recoverAll finishes every committed transaction (waiting for live ones
// to finish by themselves).
func (s *Store) recoverAll(ctx context.Context) error {
	names, err := readDirNames(filepath.Join(s.dir, txnDir))
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, journalPrefix) {
			if err := s.recoverJournal(ctx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// recoverJournal locks the stripes of journal name and, if the journal
// still exists (its owner died, or nobody finished it yet), applies it.
func (s *Store) recoverJournal(ctx context.Context, name string) error {
	stripes, _, err := journalStripes(name)
	if err != nil {
		return err
	}
	if stripes[len(stripes)-1] >= s.stripes {
		return fmt.Errorf("%w: journal %q names stripes beyond %d", ErrCorrupt, name, s.stripes)
	}
	if err := s.acquire(ctx, stripes, true); err != nil {
		return err
	}
	defer s.release(stripes)
	j, err := s.readJournal(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.apply(name, j); err != nil {
		return fmt.Errorf("finish transaction %s: %w", name, err)
	}
	s.notify()
	return nil
}

func (s *Store) readJournal(name string) (journal, error) {
	var j journal
	b, err := os.ReadFile(filepath.Join(s.dir, txnDir, name))
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("%w: journal %s: %v", ErrCorrupt, name, err)
	}
	return j, nil
}

// commitJournal durably writes j under a new journal name covering
// stripes and returns the name. From its return the transaction will
// happen, whatever becomes of this process.
func (s *Store) commitJournal(stripes []int, j journal) (string, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s%x-%s", journalPrefix, stripeBits(stripes), randomName(""))
	return name, s.writeFileAtomic(filepath.Join(s.dir, txnDir), name, b)
}

// apply carries out j's operations, makes them durable and then removes
// the journal name (if any). The caller holds every stripe j touches. It
// may run again after a crash at any point and reaches the same state.
func (s *Store) apply(name string, j journal) error {
	var dirs []string
	for i, op := range j.Ops {
		target := s.valuePath(op.Key)
		changed, err := s.applyOp(op, target)
		if err != nil {
			return err
		}
		if changed {
			dirs = append(dirs, filepath.Dir(target))
		}
		_ = hook(fmt.Sprintf("applied %d", i))
	}
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		if err := s.syncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if name == "" {
		return nil
	}
	if err := hook("remove"); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, txnDir, name)); err != nil {
		return err
	}
	return s.syncDir(filepath.Join(s.dir, txnDir))
}

// applyOp applies one journal operation and reports whether the bucket
// directory may have changed (and needs a sync).
func (s *Store) applyOp(op journalOp, target string) (changed bool, err error) {
	if op.Staged == "" {
		if err := hook("remove"); err != nil {
			return false, err
		}
		err := os.Remove(target)
		if errors.Is(err, os.ErrNotExist) {
			// Deleted before a crash (not yet durably, maybe), or never
			// there (and the bucket may not exist: apply allows that).
			return true, nil
		}
		return err == nil, err
	}
	if err := hook("rename"); err != nil {
		return false, err
	}
	err = os.Rename(filepath.Join(s.dir, tmpDir, op.Staged), target)
	if !errors.Is(err, os.ErrNotExist) {
		return err == nil, err
	}
	// The staged file is gone: renamed already, before a crash? The
	// rename may not be durable yet, so sync the directory all the same.
	exists, cur, cerr := s.current(op.Key)
	if cerr != nil {
		return false, cerr
	}
	if exists && cur == op.Version {
		return true, nil
	}
	return false, fmt.Errorf("%w: staged value %s of %q is missing", ErrCorrupt, op.Staged, op.Key)
}
