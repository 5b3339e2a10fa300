package casbench_test

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/memstore"
)

// BenchmarkUpdateContended runs b.N increments of one key from 1, 8, 32
// and 64 goroutines at once, with the default backoff, and reports
// successful updates per second and attempts (calls of the function) per
// success; the goodput under contention is updates/s at N goroutines over
// updates/s at 1. It fails on a lost update (the counter must end at b.N).
// The filestore and server runs are durable: every write is fsynced. The
// server run is latchkey serve in-process, reached through its Consul KV
// API over loopback HTTP (consulstore):
//
//	go test -run '^$' -bench UpdateContended/server -benchtime 2000x ./tests/casbench
func BenchmarkUpdateContended(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memstore", func(*testing.B) store.Store { return memstore.New() }},
		{"filestore", func(b *testing.B) store.Store {
			s, err := filestore.Open(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"server", func(b *testing.B) store.Store {
			srv := servertest.Start(b, &servertest.Options{Durable: true})
			s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: srv.Addr, Prefix: "bench/"})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, be := range backends {
		for _, g := range []int{1, 8, 32, 64} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", be.name, g), func(b *testing.B) {
				s := be.open(b)
				defer s.Close()
				benchContended(b, s, func() store.Store { return s }, g)
			})
		}
	}
	// Separate clients: every goroutine has its own store value (its own
	// connections, no turns or contention memory shared with the others),
	// as separate processes would.
	for _, g := range []int{8, 64} {
		b.Run(fmt.Sprintf("server-clients/clients=%d", g), func(b *testing.B) {
			srv := servertest.Start(b, &servertest.Options{Durable: true})
			open := func() store.Store {
				s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: srv.Addr, Prefix: "bench/"})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
			benchContended(b, open(), open, g)
		})
	}
}

// benchContended runs b.N increments of one key from g goroutines, each
// with the store client() gives it, and checks the count on s. Besides
// the rate and the attempts it reports the requests per update, by kind:
// reads and writes of the key, writes (creates and deletes) of its
// waiting line's tickets, listings of the line.
func benchContended(b *testing.B, s store.Store, client func() store.Store, g int) {
	opts := &cas.Options{MaxAttempts: 1 << 20}
	var next, attempts atomic.Int64
	var wg sync.WaitGroup
	var n requests
	clients := make([]store.Store, g)
	for i := range clients {
		clients[i] = &counted{Store: client(), n: &n, line: cas.LinePrefix("bench/counter")}
	}
	b.ResetTimer()
	for _, c := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res, err := cas.Update(context.Background(), c, "bench/counter", increment, opts)
				if err != nil {
					b.Error(err)
					return
				}
				attempts.Add(int64(res.Attempts))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	e, err := s.Get(context.Background(), "bench/counter")
	if err != nil {
		b.Fatal(err)
	}
	if n, _ := strconv.Atoi(string(e.Value)); n != b.N {
		b.Fatalf("counter = %s after %d updates: a lost or doubled update", e.Value, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	b.ReportMetric(float64(attempts.Load())/float64(b.N), "attempts/update")
	for _, m := range []struct {
		unit string
		n    *atomic.Int64
	}{{"reads/update", &n.gets}, {"writes/update", &n.puts}, {"ticket-writes/update", &n.tickets}, {"lists/update", &n.lists}} {
		b.ReportMetric(float64(m.n.Load())/float64(b.N), m.unit)
	}
}

// requests counts requests by kind.
type requests struct{ gets, puts, tickets, lists atomic.Int64 }

// counted counts the requests sent through it into n; line is the prefix
// of the key's waiting line.
type counted struct {
	store.Store
	n    *requests
	line string
}

func (c *counted) Get(ctx context.Context, key string) (store.Entry, error) {
	c.n.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counted) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	if strings.HasPrefix(key, c.line) {
		c.n.tickets.Add(1)
	} else {
		c.n.puts.Add(1)
	}
	return c.Store.Put(ctx, key, v, cond)
}

func (c *counted) Delete(ctx context.Context, key string, cond store.Condition) error {
	c.n.tickets.Add(1)
	return c.Store.Delete(ctx, key, cond)
}

func (c *counted) List(ctx context.Context, prefix string, o *store.ListOptions) (store.Page, error) {
	c.n.lists.Add(1)
	return c.Store.List(ctx, prefix, o)
}

// increment adds one to a decimal counter (absent: 0).
func increment(cur []byte, _ bool) (cas.Decision, error) {
	n, err := strconv.Atoi(cmp.Or(string(cur), "0"))
	return cas.Set([]byte(strconv.Itoa(n + 1))), err
}
