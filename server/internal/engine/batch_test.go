package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Updates that arrive while a commit is in flight share the next commit:
// one fsync for all of them. The first commit is held in OnCommit until 50
// more Updates are queued; they must then land in exactly one commit.
func TestGroupCommitBatchesQueuedUpdates(t *testing.T) {
	hold := make(chan struct{})
	var first atomic.Bool
	var sizes []int
	var mu sync.Mutex
	e, err := Open(t.TempDir(), &Options{OnCommit: func(n int, _ time.Duration) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
		if first.CompareAndSwap(false, true) {
			<-hold
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var wg sync.WaitGroup
	write := func(k string) {
		defer wg.Done()
		if _, err := e.Update(context.Background(), func(tx *Tx) error {
			tx.PutRecord(Record{Key: k, Data: []byte("v")})
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	wg.Add(1)
	go write("first")
	for !first.Load() {
		time.Sleep(time.Millisecond)
	}
	const n = 50
	wg.Add(n)
	for i := range n {
		go write(fmt.Sprintf("k%02d", i))
	}
	for len(e.reqs) < n {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != n {
		t.Fatalf("commit batch sizes %v, want [1 %d]", sizes, n)
	}
	if st := e.Stats(); st.Commits != 2 || st.Updates != n+1 {
		t.Fatalf("stats %+v, want 2 commits of %d updates", st, n+1)
	}
}

// A member of a batch that fails after writing must not take the others'
// writes down, nor leave its own behind.
func TestBatchMemberFailingAfterWriteIsIsolated(t *testing.T) {
	e := openHeldIn(t, t.TempDir(), Options{})
	var wg sync.WaitGroup
	e.startFirst(t, &wg)
	var calls atomic.Int32
	results := make([]error, 3)
	for i := range 3 {
		wg.Go(func() {
			_, results[i] = e.Update(context.Background(), func(tx *Tx) error {
				tx.PutRecord(Record{Key: fmt.Sprintf("k%d", i), Data: []byte("v")})
				if i == 1 {
					calls.Add(1)
					return fmt.Errorf("fail after write")
				}
				return nil
			})
		})
	}
	e.release(3)
	wg.Wait()
	if results[0] != nil || results[2] != nil || results[1] == nil {
		t.Fatalf("results %v, want only #1 to fail", results)
	}
	e.View(func(tx *Tx) error {
		for i, want := range []bool{true, false, true} {
			if _, ok := getRec(tx, fmt.Sprintf("k%d", i)); ok != want {
				t.Errorf("k%d present=%v, want %v", i, ok, want)
			}
		}
		return nil
	})
	if e.Index() != 4 {
		t.Fatalf("index %d, want 4 (first, k0, k2)", e.Index())
	}
}

// BenchmarkUpdate measures durable Updates (real fsync) at several
// concurrencies and reports how many Updates shared each commit; "nolog"
// commits with bbolt's own two fdatasyncs instead of the log's one.
func BenchmarkUpdate(b *testing.B) {
	for _, v := range []struct {
		name string
		opts *Options
	}{{"", nil}, {"nolog/", &Options{noLog: true}}} {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%sclients=%d", v.name, clients), func(b *testing.B) { benchUpdate(b, v.opts, clients) })
		}
	}
}

func benchUpdate(b *testing.B, opts *Options, clients int) {
	e, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				k := fmt.Sprintf("k%d", n)
				if _, err := e.Update(context.Background(), func(tx *Tx) error {
					tx.PutRecord(Record{Key: k, Data: []byte("value")})
					return nil
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	st := e.Stats()
	b.ReportMetric(float64(st.Commits)/float64(b.N), "commits/op") // a commit is one fsync round (bbolt: pages, then meta)
	b.ReportMetric(float64(st.Updates)/float64(max(st.Commits, 1)), "updates/commit")
}
