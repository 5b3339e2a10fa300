package engine

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/latchkey/latchkey/server/internal/crashtest"
	"github.com/latchkey/latchkey/store"
)

// errRefused stands for any refusal an Update decides without writing (an
// S3 412/409/404, a Consul txn 409, the store's ErrConflict).
var errRefused = errors.New("refused: the key exists")

// groupFailResult is what each member of the failing batch got.
type groupFailResult struct {
	creator, refuser, reader, storePut, storeDel error
	readerSaw                                    bool
}

// failingBatch queues, behind a held first commit, one batch whose commit
// fails because its first member writes value (too large for the disk or
// for maxSize). The others decide on that member's uncommitted write: a
// refusal returned by fn, a read-only answer, and the KVStore's
// conditional Put and Delete. It returns what each got.
func failingBatch(t *testing.T, h *heldEngine, value []byte) groupFailResult {
	t.Helper()
	var wg sync.WaitGroup
	h.startFirst(t, &wg)
	var res groupFailResult
	ctx := context.Background()
	s := h.Store(rawCodec{})
	steps := []func(){
		func() {
			_, res.creator = h.Update(ctx, func(tx *Tx) error {
				tx.PutRecord(Record{Key: "bucket", Data: value})
				return nil
			})
		},
		func() {
			_, res.refuser = h.Update(ctx, func(tx *Tx) error {
				if _, ok := getRec(tx, "bucket"); ok {
					return errRefused
				}
				tx.PutRecord(Record{Key: "bucket", Data: []byte("mine")})
				return nil
			})
		},
		func() {
			_, res.reader = h.Update(ctx, func(tx *Tx) error {
				_, res.readerSaw = getRec(tx, "bucket")
				return nil
			})
		},
		func() { _, res.storePut = s.Put(ctx, "bucket", []byte("x"), store.IfAbsent) },
		func() { res.storeDel = s.Delete(ctx, "bucket", store.IfMatch("1")) },
	}
	for i, step := range steps {
		wg.Go(step)
		for len(h.reqs) < i+1 { // queue them in this order
			runtime.Gosched()
		}
	}
	h.release(len(steps))
	wg.Wait()
	return res
}

// checkGroupFail: every member that ran in the failed batch got ErrFailed
// (through the KVStore: ErrUnknownOutcome wrapping it), not the refusal or
// conflict it decided on a batch-mate's write that never committed.
func checkGroupFail(t *testing.T, res groupFailResult) {
	t.Helper()
	if !errors.Is(res.creator, ErrFailed) {
		t.Fatalf("the oversized write got %v, want ErrFailed", res.creator)
	}
	if !res.readerSaw {
		t.Fatal("the reader did not see its batch-mate's write: the batch did not form as intended")
	}
	for name, err := range map[string]error{"refusal": res.refuser, "read-only answer": res.reader,
		"store IfAbsent put": res.storePut, "store IfMatch delete": res.storeDel} {
		if !errors.Is(err, ErrFailed) {
			t.Errorf("%s decided on the uncommitted write returned %v, want ErrFailed", name, err)
		}
		if errors.Is(err, errRefused) || errors.Is(err, store.ErrConflict) {
			t.Errorf("%s kept its refusal %v though its batch never committed", name, err)
		}
	}
	if !errors.Is(res.storePut, store.ErrUnknownOutcome) || !errors.Is(res.storeDel, store.ErrUnknownOutcome) {
		t.Errorf("KVStore answers %v / %v, want ErrUnknownOutcome", res.storePut, res.storeDel)
	}
}

// checkReopened reopens the engine in dir after a failed commit and checks
// that the failed write to key is absent (it was never committed, and the
// log does not replay it) while the acknowledged write to "first" is there.
func checkReopened(t *testing.T, dir, key string) {
	t.Helper()
	e := openT(t, dir)
	e.View(func(tx *Tx) error {
		if _, ok := getRec(tx, key); ok {
			t.Errorf("the failed write to %q is present after reopen", key)
		}
		if _, ok := getRec(tx, "first"); !ok {
			t.Error("the acknowledged first write is lost")
		}
		return nil
	})
}

// With the engine's fault hook (maxSize: the file may not grow, as on a
// full disk) the batch's commit fails.
func TestFailedCommitFailsEveryMemberThatRan(t *testing.T) {
	dir := t.TempDir()
	h := openHeldIn(t, dir, Options{NoSync: true, maxSize: 1 << 20})
	checkGroupFail(t, failingBatch(t, h, make([]byte, 2<<20)))
	h.Close()
	checkReopened(t, dir, "bucket")
}

// The same on a real full file system: a small tmpfs, fsync on, the
// commit fails with ENOSPC; after reopen the key does not exist, so an
// "already exists" answer would have been a lie.
func TestFailedCommitFailsEveryMemberThatRanOnFullDisk(t *testing.T) {
	dir := crashtest.Tmpfs(t, 4<<20)
	h := openHeldIn(t, dir, Options{})
	checkGroupFail(t, failingBatch(t, h, make([]byte, 8<<20)))
	if err := h.Err(); err == nil {
		t.Fatal("engine did not fail")
	}
	t.Logf("commit failure on the full tmpfs: %v", h.Err())
	h.Close()
	checkReopened(t, dir, "bucket")
}

// With the log, a batch whose record cannot be appended (a full disk:
// ENOSPC on the log file) fails as a failed bbolt commit does: every
// member that ran gets ErrFailed, nothing is acknowledged, and after
// reopen the batch is absent (bbolt never committed it) while the
// acknowledged first write is there.
func TestFailedLogAppendFailsEveryMemberThatRan(t *testing.T) {
	dir := t.TempDir()
	h := openHeldIn(t, dir, Options{})
	if h.log == nil {
		t.Fatal("the engine runs without its log")
	}
	h.appendFault = func() error {
		if h.first.Load() { // the held first commit has been logged
			return syscall.ENOSPC
		}
		return nil
	}
	checkGroupFail(t, failingBatch(t, h, []byte("small enough for bbolt")))
	if !errors.Is(h.Err(), syscall.ENOSPC) {
		t.Fatalf("engine error %v, want ENOSPC", h.Err())
	}
	h.Close()
	checkReopened(t, dir, "bucket")
}
