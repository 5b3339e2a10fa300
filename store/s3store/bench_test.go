package s3store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

// BenchmarkConditionalPut measures 4 KiB compare-and-swap PUTs (If-Match
// chained on each client's own key, so every PUT is a conditional write
// that wins) through s3store with 1, 16 and 64 concurrent clients, against
// our server (fsync on: every acknowledged write is durable) and, when
// LATCHKEY_TEST_VERSITYGW is set, Versity Gateway on the same machine.
// It reports ops/s and the p99 latency of one PUT.
//
//	go test -run '^$' -bench ConditionalPut -benchtime 2000x ./store/s3store/
func BenchmarkConditionalPut(b *testing.B) {
	peers := []func(b *testing.B) (peer, bool){
		func(b *testing.B) (peer, bool) {
			srv := servertest.Start(b, &servertest.Options{Durable: true})
			return peer{name: "latchkey", endpoint: srv.URL, accessKey: srv.AccessKey, secret: srv.SecretKey}, true
		},
		func(b *testing.B) (peer, bool) {
			srv := servertest.Start(b, nil)
			return peer{name: "latchkey-nosync", endpoint: srv.URL, accessKey: srv.AccessKey, secret: srv.SecretKey}, true
		},
		func(b *testing.B) (peer, bool) {
			if os.Getenv("LATCHKEY_TEST_VERSITYGW") == "" {
				return peer{}, false
			}
			return versityPeer(b), true
		},
	}
	for _, mk := range peers {
		p, ok := mk(b)
		if !ok {
			b.Log("versitygw: LATCHKEY_TEST_VERSITYGW not set, not measured")
			continue
		}
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", p.name, clients), func(b *testing.B) {
				benchCAS(b, p.open(b), clients)
			})
		}
	}
}

func benchCAS(b *testing.B, s *s3store.Store, clients int) {
	ctx := context.Background()
	value := make([]byte, 4096)
	versions := make([]store.Version, clients)
	for i := range versions {
		v, err := s.Put(ctx, fmt.Sprintf("bench/%d", i), value, store.IfAbsent)
		if err != nil {
			b.Fatal(err)
		}
		versions[i] = v
	}
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < clients; c++ {
		n := b.N / clients
		if c < b.N%clients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("bench/%d", c)
			v := versions[c]
			for i := 0; i < n; i++ {
				t0 := time.Now()
				nv, err := s.Put(ctx, key, value, store.IfMatch(v))
				lat[c] = append(lat[c], time.Since(t0))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				v = nv
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "puts/s")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
}
