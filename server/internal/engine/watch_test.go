package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Only the waiters of touched prefixes wake: with 1000 idle waiters on other
// prefixes, one write wakes exactly its own waiter.
func TestWaitWakesOnlyTouchedPrefix(t *testing.T) {
	e := openNoSync(t)
	start := e.Index()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	woke := make(chan string, 1001)
	for i := range 1000 {
		p := fmt.Sprintf("idle/%d/", i)
		go func() {
			if e.Wait(ctx, p, start) == nil {
				woke <- p
			}
		}()
	}
	go func() {
		if e.Wait(ctx, "busy/", start) == nil {
			woke <- "busy/"
		}
	}()
	awaitWaiters(t, e, 1001)
	put(t, e, "busy/x", "v")
	if got := <-woke; got != "busy/" {
		t.Fatalf("woke %q", got)
	}
	e.watch.mu.Lock()
	left := len(e.watch.byPfx)
	e.watch.mu.Unlock()
	if left != 1000 {
		t.Fatalf("%d idle waiters left, want 1000", left)
	}
}

// BenchmarkUpdateWithIdleWaiters shows that a commit's cost does not grow
// with the number of waiters on other prefixes.
func BenchmarkUpdateWithIdleWaiters(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			e, err := Open(b.TempDir(), &Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range n {
				go e.Wait(ctx, fmt.Sprintf("idle/%d/", i), e.Index()+1<<40)
			}
			b.ResetTimer()
			for i := range b.N {
				e.Update(ctx, func(tx *Tx) error {
					tx.PutRecord(Record{Key: fmt.Sprintf("busy/%d", i)})
					return nil
				})
			}
		})
	}
}

// Waiters whose context ends are unregistered: a thousand cancelled
// blocking reads leave nothing behind in the registry.
func TestCancelledWaitersDoNotLeak(t *testing.T) {
	e := openNoSync(t)
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 1000)
	for i := range 1000 {
		go func() { errs <- e.Wait(ctx, fmt.Sprintf("p/%d", i%7), e.Index()) }()
	}
	for {
		e.watch.mu.Lock()
		n := 0
		for _, set := range e.watch.byPfx {
			n += len(set)
		}
		e.watch.mu.Unlock()
		if n == 1000 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	for range 1000 {
		if err := <-errs; err != context.Canceled {
			t.Fatalf("cancelled Wait returned %v", err)
		}
	}
	e.watch.mu.Lock()
	defer e.watch.mu.Unlock()
	if len(e.watch.byPfx) != 0 || len(e.watch.lengths) != 0 {
		t.Fatalf("registry after cancelling every waiter: %d prefixes, %d lengths", len(e.watch.byPfx), len(e.watch.lengths))
	}
}

// No lost wake-ups: a reader that reads, then Waits from what it read,
// always sees the next commit, however the commits interleave with its read
// and its registration. Each round's Wait must return once the writer has
// committed; a lost wake-up of the last commit blocks it until the deadline.
func TestWaitLosesNoWakeups(t *testing.T) {
	e := openNoSync(t)
	const rounds = 500
	go func() {
		for i := range rounds {
			e.Update(t.Context(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: "w/k", Data: fmt.Appendf(nil, "%d", i)})
				return nil
			})
		}
	}()
	for {
		var seen, mod uint64
		e.View(func(tx *Tx) error {
			seen = tx.Index()
			kv, _ := getRec(tx, "w/k")
			mod = kv.ModifyIndex
			return nil
		})
		if mod >= uint64(rounds)+1 { // index 1 is the initial one
			break
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := e.Wait(ctx, "w/", seen)
		cancel()
		if err != nil {
			t.Fatalf("Wait after reading index %d (key at %d): %v: a wake-up was lost", seen, mod, err)
		}
	}
}

// A waiter on the whole KV root (prefix "") is woken only by KV keys: the
// names layers Touch (S3 objects and buckets, sessions) live in another
// space, however they are spelt. A Touch-only commit leaves the waiter
// registered; a KV write then wakes it. And a waiter on a touched name
// (WaitTouched) is woken by Touch, never by a KV key of the same spelling.
func TestKVRootWaiterIgnoresTouchedNames(t *testing.T) {
	e := openNoSync(t)
	start := e.Index()
	woke := make(chan error, 1)
	go func() { woke <- e.Wait(t.Context(), "", start) }()
	registered := func(want int) {
		t.Helper()
		for n := -1; n != want; {
			e.watch.mu.Lock()
			n = 0
			for _, set := range e.watch.byPfx {
				n += len(set)
			}
			e.watch.mu.Unlock()
			if n != want {
				time.Sleep(time.Millisecond)
			}
		}
	}
	registered(1)
	for _, name := range []string{"\x00s3/bkt/obj", "\x00s3u/upload", "\x00consul/session/x", "app/config"} {
		if _, err := e.Update(t.Context(), func(tx *Tx) error { tx.Touch(name); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	e.watch.mu.Lock()
	n := len(e.watch.byPfx)
	e.watch.mu.Unlock()
	if n != 1 {
		t.Fatalf("after 4 Touch-only commits %d waiters are registered, want the KV-root waiter still waiting", n)
	}
	put(t, e, "app/config", "v")
	if err := <-woke; err != nil {
		t.Fatalf("KV write: Wait = %v", err)
	}

	// The other way round: a KV key spelt like a touched name does not
	// wake a waiter on touched names.
	start = e.Index()
	go func() { woke <- e.WaitTouched(t.Context(), "\x00s3/", start) }()
	registered(1)
	put(t, e, "\x00s3/bkt/obj", "v")
	e.watch.mu.Lock()
	n = len(e.watch.byPfx)
	e.watch.mu.Unlock()
	if n != 1 {
		t.Fatalf("a KV write woke a waiter on touched names")
	}
	if _, err := e.Update(t.Context(), func(tx *Tx) error { tx.Touch("\x00s3/bkt/obj"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("Touch: WaitTouched = %v", err)
	}
}
