package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/store"
)

// Txn implements store.Transactor. Values are staged and fsynced before
// any lock is taken; then every stripe the keys hash to is locked
// exclusively (in ascending order), every condition is checked against the
// state before the transaction, and the writes are applied through a
// journal (see journal.go) so that a crash leaves all of them or none.
// A transaction with one write needs no journal: one rename is atomic.
func (s *Store) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	const op = "txn"
	if err := store.ValidateTxn(ops); err != nil {
		return nil, store.NewOpError(backend, op, "", errKind(err), err)
	}
	if err := s.begin(ctx, store.Guard, op, ops[0].Key); err != nil {
		return nil, err
	}
	defer s.inflight.Done()

	out := make([]store.Version, len(ops))
	var j journal
	var releases []func() // the staged files' locks, dropped last
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	journaled := false // a journal may name the staged files: they are recovery's
	defer func() {     // staged files not published (a no-op for published ones)
		if journaled {
			return
		}
		for _, jo := range j.Ops {
			if jo.Staged != "" {
				os.Remove(filepath.Join(s.dir, tmpDir, jo.Staged))
			}
		}
	}()
	keys := make([]string, len(ops))
	for i, o := range ops {
		keys[i] = o.Key
		switch o.Kind {
		case store.OpPut:
			jo, release, err := s.stageOp(ctx, o)
			if err != nil {
				return nil, opErr(op, o.Key, store.ErrTransient, err)
			}
			releases = append(releases, release)
			j.Ops = append(j.Ops, jo)
			out[i] = formatVersionString(jo.Version)
		case store.OpDelete:
			j.Ops = append(j.Ops, journalOp{Key: o.Key})
		}
	}

	stripes := s.sortedStripes(keys...)
	unlock, err := s.lock(ctx, stripes, true)
	if err != nil {
		return nil, opErr(op, ops[0].Key, store.ErrTransient, err)
	}
	defer unlock()
	if err := s.checkConds(ops); err != nil {
		return nil, err
	}
	if len(j.Ops) == 0 {
		return out, nil
	}
	_ = hook("checked")
	if err := s.checkStaged(j); err != nil {
		return nil, opErr(op, ops[0].Key, store.ErrTransient, err)
	}
	kind, err := s.commit(stripes, j, &journaled)
	if err != nil {
		return nil, opErr(op, ops[0].Key, kind, err)
	}
	return out, nil
}

// checkConds checks every op's condition against the current state; the
// caller holds the ops' stripes.
func (s *Store) checkConds(ops []store.TxnOp) error {
	for i, o := range ops {
		exists, cur, err := s.current(o.Key)
		if err != nil {
			return opErr("txn", o.Key, store.ErrTransient, err)
		}
		if !o.Cond.Holds(exists, formatVersionString(cur)) {
			return store.NewOpError(backend, "txn", o.Key, store.ErrConflict,
				&store.TxnError{Index: i, Key: o.Key, Err: store.ErrConflict})
		}
	}
	return nil
}

// commit applies j, through a committed journal when it writes more than
// one key. On failure it returns the error's kind: ErrTransient when
// nothing happened, ErrUnknownOutcome when the transaction may have. It
// sets *journaled once a journal may exist: from then on the staged files
// belong to recovery (the next locker of these stripes, or Open, rolls the
// journal forward), and the caller must not remove them even if applying
// fails here.
func (s *Store) commit(stripes []int, j journal, journaled *bool) (kind, err error) {
	name := ""
	if len(j.Ops) > 1 {
		// The journal names the staged files: their names in tmp/ must
		// be durable before it is, or a power cut after the journal
		// leaves a transaction nobody can finish.
		if err := s.syncDir(filepath.Join(s.dir, tmpDir)); err != nil {
			return store.ErrTransient, err
		}
		if name, err = s.commitJournal(stripes, j); err != nil {
			_, serr := os.Stat(filepath.Join(s.dir, txnDir, name))
			if errors.Is(serr, os.ErrNotExist) {
				return store.ErrTransient, err // no journal: nothing happened
			}
			*journaled = true
			if serr != nil { // cannot tell: recovery decides
				return store.ErrUnknownOutcome, err
			}
			// The journal is visible though not known durable: finish the
			// transaction, but do not promise it.
			if aerr := s.apply(name, j); aerr == nil {
				s.notify()
			}
			return store.ErrUnknownOutcome, err
		}
		*journaled = true
		_ = hook("committed")
	}
	err = s.apply(name, j)
	s.notify()
	if err != nil {
		// A committed journal stays behind and the next locker of these
		// stripes finishes it; either way the outcome is not ours to say.
		return store.ErrUnknownOutcome, err
	}
	return nil, nil
}

// stageOp stages the value of an OpPut and makes sure its bucket exists;
// release drops the staged file's lock (see stage).
func (s *Store) stageOp(ctx context.Context, o store.TxnOp) (journalOp, func(), error) {
	v, err := s.newVersion(ctx)
	if err != nil {
		return journalOp{}, nil, err
	}
	path, release, err := s.stage(ctx, o.Key, v, bytes.NewReader(o.Value), int64(len(o.Value)))
	if err != nil {
		return journalOp{}, nil, err
	}
	jo := journalOp{Key: o.Key, Staged: filepath.Base(path), Version: v}
	if err := s.ensureBucket(o.Key); err != nil {
		os.Remove(path)
		release()
		return journalOp{}, nil, err
	}
	return jo, release, nil
}

// errStagedGone: a staged value vanished before the journal was written
// (removed by hand, or by a cleanup that ignores the staged files' locks).
var errStagedGone = errors.New("a staged value vanished before the commit; nothing was written")

// checkStaged makes sure every staged file j names still exists, before
// the journal makes them the transaction's: a journal must never name a
// file that is gone, or nobody could finish it.
func (s *Store) checkStaged(j journal) error {
	for _, op := range j.Ops {
		if op.Staged == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.dir, tmpDir, op.Staged)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w (%s of %q)", errStagedGone, op.Staged, op.Key)
			}
			return err
		}
	}
	return nil
}

// errKind is the sentinel of a store.ValidateTxn error.
func errKind(err error) error {
	for _, k := range []error{store.ErrInvalidKey, store.ErrUnsupported} {
		if errors.Is(err, k) {
			return k
		}
	}
	return store.ErrUnsupported
}
