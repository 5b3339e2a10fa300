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
	e, err := Open(t.TempDir(), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
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
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n != 1001; {
		e.watch.mu.Lock()
		n = len(e.watch.byPfx)
		e.watch.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("only %d waiters registered", n)
		}
		time.Sleep(time.Millisecond)
	}
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
					tx.PutKV(KV{Key: fmt.Sprintf("busy/%d", i)})
					return nil
				})
			}
		})
	}
}
