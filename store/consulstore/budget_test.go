package consulstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
)

// TestManyStoresAndWatchesStayUnderConnLimit: 40 Stores in one process,
// each with 8 watchers and 2 writers, against our server imitating
// Consul's per-client limit (200 connections, 429 past it). Every store
// keeping its own pool and every watch holding a connection for its whole
// wait, that is 320 blocking queries: Consul, and now our server, answer
// the extra ones 429 and the callers saw ErrTransient. Stores of one
// address now share one budget (Options.MaxConns), watchers of one key
// share one blocking query, and no caller sees an error; the connections
// open at once, counted by a proxy, stay within the budget.
func TestManyStoresAndWatchesStayUnderConnLimit(t *testing.T) {
	srv := servertest.Start(t, nil) // Consul's default limit: 200
	p := newProxy(t, srv.Addr)
	const stores, watchers, writers, keys = 40, 8, 2, 8
	prefix := testutil.RandomName("budget-")
	var ss []*Store
	for range stores {
		s, err := Open(context.Background(), &Options{Address: p.Addr(), Prefix: prefix})
		testutil.Opened(t, s, err)
		ss = append(ss, s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var vs [keys]store.Version
	for k := range keys {
		v, err := ss[0].Put(ctx, fmt.Sprint("w", k), []byte("0"), store.Unconditional)
		if err != nil {
			t.Fatal(err)
		}
		vs[k] = v
	}
	start := time.Now()
	var wg, wwg sync.WaitGroup
	errs := make(chan error, stores*(watchers+writers))
	for i, s := range ss {
		for w := range watchers {
			k := (i + w) % keys
			wg.Go(func() {
				if err := s.WaitChange(ctx, fmt.Sprint("w", k), vs[k]); err != nil {
					errs <- fmt.Errorf("store %d: watch w%d: %w", i, k, err)
				}
			})
		}
		for w := range writers {
			wwg.Go(func() {
				for r := range 3 {
					key := fmt.Sprintf("c%d-%d", i, w)
					if _, err := s.Put(ctx, key, []byte(fmt.Sprint(r)), store.Unconditional); err != nil {
						errs <- fmt.Errorf("store %d: put: %w", i, err)
						return
					}
					if _, err := s.Get(ctx, key); err != nil {
						errs <- fmt.Errorf("store %d: get: %w", i, err)
						return
					}
				}
			})
		}
	}
	// Let the watches settle into their blocking queries, then wake them.
	time.Sleep(500 * time.Millisecond)
	wwg.Wait()
	t.Logf("writers done after %v", time.Since(start))
	for k := range keys {
		if _, err := ss[1].Put(ctx, fmt.Sprint("w", k), []byte("1"), store.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	t.Logf("watchers done after %v", time.Since(start))
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 5 {
		t.Errorf("… %d errors in all", n)
	}
	if peak := p.peak.Load(); peak > DefaultMaxConns {
		t.Errorf("%d stores × %d watchers and %d writers had %d connections open at once; want at most %d (DefaultMaxConns)",
			stores, watchers, writers, peak, DefaultMaxConns)
	}
	t.Logf("peak %d connections open at once, %d opened in all", p.peak.Load(), p.total.Load())
}
