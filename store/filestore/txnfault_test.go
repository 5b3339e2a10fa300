package filestore

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// txnFaultOps writes a and x/b (two stripes, two buckets) and deletes c.
var txnFaultOps = []store.TxnOp{
	store.PutOp("a", []byte("new"), store.Unconditional),
	store.PutOp("x/b", []byte("new"), store.Unconditional),
	store.DeleteOp("c", store.Unconditional),
}

// txnState reads a, x/b and c and says whether they show the transaction
// applied ("new"), not applied ("old"), or neither; err is a failed read.
func txnState(s *Store) (string, error) {
	ctx := context.Background()
	var got []string
	for _, k := range []string{"a", "x/b", "c"} {
		e, err := s.Get(ctx, k)
		switch {
		case errors.Is(err, store.ErrNotFound):
			got = append(got, "-")
		case err != nil:
			return "", fmt.Errorf("get %q: %w", k, err)
		default:
			got = append(got, string(e.Value))
		}
	}
	switch fmt.Sprint(got) {
	case "[old old old]":
		return "old", nil
	case "[new new -]":
		return "new", nil
	}
	return fmt.Sprintf("half applied %v", got), nil
}

// An I/O error (ENOSPC, EIO) at any file-system step of a transaction
// leaves it all or nothing: every later Get works and sees all of it or
// none, the directory reopens, and an error that says nothing happened
// (ErrTransient) is never followed by the transaction's writes.
func TestTxnIOErrorAtEveryStep(t *testing.T) {
	// setup opens a fresh store holding a, x/b and c ("old"). Every step
	// still reaches the hook without fsync, so the test skips the syncs.
	setup := func(t *testing.T, dir string) *Store {
		s := open(t, dir, &Options{Stripes: 8})
		s.noSync = true
		for _, k := range []string{"a", "x/b", "c"} {
			mustPut(t, s, k, "old", store.Unconditional)
		}
		return s
	}
	// A dry run names the steps.
	var steps []string
	{
		s := setup(t, t.TempDir())
		testHook = func(point string) error { steps = append(steps, point); return nil }
		_, err := s.Txn(context.Background(), txnFaultOps)
		testHook = nil
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(steps) < 10 {
		t.Fatalf("only %d steps seen: %v", len(steps), steps)
	}
	for i, step := range steps {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			t.Run(fmt.Sprintf("%02d-%s-%s", i, step, errno), func(t *testing.T) {
				dir := t.TempDir()
				s := setup(t, dir)
				n := 0
				testHook = func(string) error {
					n++
					if n == i+1 {
						return errno
					}
					return nil
				}
				_, terr := s.Txn(context.Background(), txnFaultOps)
				testHook = nil
				state, err := txnState(s)
				if err != nil {
					t.Fatalf("after %v at step %s (txn: %v): %v", errno, step, terr, err)
				}
				if state != "old" && state != "new" {
					t.Fatalf("after %v at step %s (txn: %v): %s", errno, step, terr, state)
				}
				if state == "new" && terr != nil && !errors.Is(terr, store.ErrUnknownOutcome) {
					t.Errorf("txn applied but answered %v, want nil or ErrUnknownOutcome", terr)
				}
				if state == "old" && terr == nil {
					t.Error("txn answered success but is not applied")
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s2, err := Open(dir, &Options{Stripes: 8})
				if err != nil {
					t.Fatalf("reopen after %v at step %s: %v", errno, step, err)
				}
				defer s2.Close()
				again, err := txnState(s2)
				if err != nil || again != state {
					t.Fatalf("after reopen: %s, %v; before: %s", again, err, state)
				}
			})
		}
	}
}
