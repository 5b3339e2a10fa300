package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// The obligations of store.Watcher, run when the backend declares
// Capabilities.Watch and implements the interface.

func openWatch(t *testing.T, h Harness) (context.Context, store.Store, store.Watcher) {
	t.Helper()
	return openAs[store.Watcher](t, h, "Watch")
}

// waitUntilChanged calls WaitChange until a re-read shows the key is no
// longer at last (WaitChange may return early; callers re-read). It runs
// on its own goroutine and must not touch t.
func waitUntilChanged(ctx context.Context, s store.Store, w store.Watcher, key string, last store.Version) error {
	for range 1000 {
		if err := w.WaitChange(ctx, key, last); err != nil {
			return err
		}
		e, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if last != "" {
				return nil
			}
		case err != nil:
			return err
		case e.Version != last:
			return nil
		}
	}
	return fmt.Errorf("WaitChange returned 1000 times without a change")
}

// testWakes starts a waiter on key at last, then runs write, and checks
// the waiter returns.
func testWakes(t *testing.T, ctx context.Context, s store.Store, w store.Watcher, key string, last store.Version, write func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- waitUntilChanged(ctx, s, w, key, last) }()
	// Give the waiter time to block; if it has not, it sees the change on
	// its first call, which is correct too.
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("waiter returned before the write: %v", err)
	default:
	}
	write()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	case <-time.After(promptly):
		t.Errorf("waiter did not return within %v of the write", promptly)
	}
}

var watchTests = []subtest{
	{name: "returns after a write to the key", need: hasWatch, run: func(t *testing.T, h Harness) {
		ctx, s, w := openWatch(t, h)
		v := put(t, ctx, s, "k", []byte("1"), store.Unconditional)
		testWakes(t, ctx, s, w, "k", v, func() { put(t, ctx, s, "k", []byte("2"), store.Unconditional) })
	}},
	{name: "returns after the key is deleted", need: hasWatch, run: func(t *testing.T, h Harness) {
		ctx, s, w := openWatch(t, h)
		v := put(t, ctx, s, "k", []byte("1"), store.Unconditional)
		testWakes(t, ctx, s, w, "k", v, func() { del(t, ctx, s, "k", store.Unconditional) })
	}},
	{name: "returns after a missing key is created", need: hasWatch, run: func(t *testing.T, h Harness) {
		ctx, s, w := openWatch(t, h)
		testWakes(t, ctx, s, w, "k", "", func() { put(t, ctx, s, "k", []byte("1"), store.Unconditional) })
	}},
	{name: "returns when ctx is cancelled", need: hasWatch, run: func(t *testing.T, h Harness) {
		ctx, s, w := openWatch(t, h)
		v := put(t, ctx, s, "k", []byte("1"), store.Unconditional)
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := runDone(t, wctx, s, ctxOp{"WaitChange", func(ctx context.Context, s store.Store) error {
			return waitUntilChanged(ctx, s, w, "k", v)
		}})
		wantErr(t, "WaitChange with no change", err, context.DeadlineExceeded)
	}},
	{name: "returns immediately if the version already differs", need: hasWatch, run: func(t *testing.T, h Harness) {
		ctx, s, w := openWatch(t, h)
		v1 := put(t, ctx, s, "k", []byte("1"), store.Unconditional)
		v2 := put(t, ctx, s, "k", []byte("2"), store.Unconditional)
		cases := []struct {
			name string
			key  string
			last store.Version
		}{
			{"stale version", "k", v1},
			{"absent while the key exists", "k", ""},
			{"a version of a missing key", "missing", v2},
		}
		for _, c := range cases {
			err := runDone(t, ctx, s, ctxOp{"WaitChange " + c.name, func(ctx context.Context, s store.Store) error {
				return w.WaitChange(ctx, c.key, c.last)
			}})
			if err != nil {
				t.Errorf("WaitChange (%s): %v", c.name, err)
			}
		}
	}},
}
