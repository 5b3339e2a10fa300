package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// With the log, bbolt commits a batch only after its record is durable,
// so a View that starts while the record is being written and synced runs
// at once on the last durable commit instead of waiting for that fsync.
// Held inside the append (record written, not yet fdatasynced): the View
// answers without the write, and after the commit sees it.
func TestViewDoesNotWaitForTheLogFsync(t *testing.T) {
	inAppend, release := make(chan struct{}), make(chan struct{})
	armed := make(chan struct{})
	e, err := Open(t.TempDir(), &Options{crashHook: func(point string) {
		select {
		case <-armed:
		default:
			return
		}
		if point == crashAppendWrote {
			close(inAppend)
			<-release
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.log == nil {
		t.Fatal("the engine runs without its log")
	}
	close(armed)
	updated := make(chan error, 1)
	go func() {
		_, err := e.Update(context.Background(), func(tx *Tx) error {
			tx.PutRecord(Record{Key: "k", Data: []byte("v")})
			return nil
		})
		updated <- err
	}()
	<-inAppend
	saw := viewSees(e, "k")
	select {
	case ok := <-saw:
		if ok {
			t.Error("a View saw a write whose log record is not yet durable")
		}
	case <-time.After(10 * time.Second): // a deadlock detector, not a timing assertion
		t.Error("a View waited for the fsync of a commit it cannot see")
	}
	close(release)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	e.View(func(tx *Tx) error {
		if _, ok := getRec(tx, "k"); !ok {
			t.Error("the View after the commit does not see the write")
		}
		return nil
	})
}

// bbolt's commit fails (maxSize: the file may not grow) after the batch's
// record is durable in the log: the record is withdrawn, so the next Open
// does not replay a batch whose member was told it failed.
func TestFailedCommitWithdrawsItsLogRecord(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, &Options{maxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if e.log == nil {
		t.Fatal("the engine runs without its log")
	}
	put(t, e, "first", "acked")
	_, err = e.Update(context.Background(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: "big", Data: make([]byte, 2<<20)})
		return nil
	})
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("a commit past maxSize: %v, want ErrFailed", err)
	}
	e.Close()
	checkReopened(t, dir, "big")
}
