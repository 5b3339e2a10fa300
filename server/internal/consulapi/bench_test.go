package consulapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// BenchmarkCASPut measures durable (fsynced) compare-and-swap puts through
// the HTTP API: PUT /v1/txn with one cas op, which answers the new
// ModifyIndex so each client chains its CAS without re-reading. "distinct"
// gives every client its own key (every CAS succeeds); "hot" makes all
// clients CAS one key (a loser re-reads the index with a GET and goes
// again; conflicts/op reports how often). Reports ops/s (CAS requests per
// second, successful or not), p50 and p99 latency of one CAS request.
//
//	go test -run '^$' -bench CASPut -benchtime 3000x ./server/internal/consulapi
func BenchmarkCASPut(b *testing.B) {
	for _, mode := range []string{"distinct", "hot"} {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode, clients), func(b *testing.B) {
				benchCAS(b, mode == "hot", clients)
			})
		}
	}
}

func benchCAS(b *testing.B, hot bool, clients int) {
	e, err := engine.Open(b.TempDir(), nil) // fsync on: durable
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	h, err := New(e, &Options{NodeName: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	srv := testutil.Serve(b, h)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}

	var next atomic.Int64
	var conflicts atomic.Int64
	lat := make([][]time.Duration, clients)
	// Each CAS writes a value of its own: an identical one would be
	// skipped (as Consul skips it) and cost no fsync.
	value := func(n int64) []byte { return fmt.Appendf(bytes.Repeat([]byte("v"), 108), "%020d", n) }
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "bench/hot"
			if !hot {
				key = "bench/k" + strconv.Itoa(c)
			}
			var idx uint64
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				t0 := time.Now()
				got, ok, err := benchTxnCAS(hc, srv.URL, key, value(n), idx)
				lat[c] = append(lat[c], time.Since(t0))
				if err != nil {
					b.Error(err)
					return
				}
				if ok {
					idx = got
					continue
				}
				conflicts.Add(1)
				if idx, err = benchIndex(hc, srv.URL, key); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/el.Seconds(), "ops/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(conflicts.Load())/float64(len(all)), "conflicts/op")
}

// benchTxnCAS sends one cas op; it returns the new index when it applied.
func benchTxnCAS(hc *http.Client, base, key string, value []byte, idx uint64) (uint64, bool, error) {
	body, _ := json.Marshal([]map[string]any{{"KV": map[string]any{"Verb": "cas", "Key": key, "Value": value, "Index": idx}}})
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/txn", bytes.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct{ KV struct{ ModifyIndex uint64 } }
	}
	switch resp.StatusCode {
	case 200:
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Results) != 1 {
			return 0, false, fmt.Errorf("txn answer: %v", err)
		}
		return out.Results[0].KV.ModifyIndex, true, nil
	case 409:
		io.Copy(io.Discard, resp.Body)
		return 0, false, nil
	}
	b, _ := io.ReadAll(resp.Body)
	return 0, false, fmt.Errorf("txn: %d %s", resp.StatusCode, b)
}

// benchIndex reads key's ModifyIndex (0 when missing).
func benchIndex(hc *http.Client, base, key string) (uint64, error) {
	resp, err := hc.Get(base + "/v1/kv/" + key)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return 0, nil
	}
	var es []dirEntry
	if err := json.NewDecoder(resp.Body).Decode(&es); err != nil || len(es) != 1 {
		return 0, fmt.Errorf("get %s: %v", key, err)
	}
	return es[0].ModifyIndex, nil
}
