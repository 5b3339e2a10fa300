package s3api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// benchServer is the handler over a durable (fsyncing) engine.
func benchServer(b *testing.B) *testServer {
	b.Helper()
	e, err := engine.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(MustNew(e, &Options{Anonymous: true}))
	b.Cleanup(func() { srv.Close(); e.Close() })
	s := &testServer{t: b, e: e, srv: srv}
	s.bucket("bench")
	return s
}

// patternReader yields n bytes of a repeating pattern without holding
// them.
type patternReader struct{ left int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), p.left))
	for i := range n {
		b[i] = byte('a' + i%26)
	}
	p.left -= int64(n)
	return n, nil
}

// peakRSS is the process's resident-set high-water mark (VmHWM), in MiB.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkLargeObject PUTs and GETs one 1 GiB object over HTTP, both
// streamed, and reports the process's peak RSS: it stays near the
// baseline, far below the object size. Run it alone:
//
//	go test -run '^$' -bench LargeObject -benchtime 1x ./server/internal/s3api/
func BenchmarkLargeObject(b *testing.B) {
	const size = 1 << 30
	s := benchServer(b)
	runtime.GC()
	before := peakRSS()
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		key := fmt.Sprintf("%s/bench/big%d", s.srv.URL, i)
		req, _ := http.NewRequest("PUT", key, &patternReader{left: size})
		req.ContentLength = size
		res, err := s.srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("put: %d", res.StatusCode)
		}
		res, err = s.srv.Client().Get(key)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if n != size {
			b.Fatalf("get: %d bytes", n)
		}
	}
	b.StopTimer()
	b.ReportMetric(before, "RSS-before-MiB")
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
}

// BenchmarkConditionalPut4K measures durable 4 KiB create-if-absent PUTs
// (If-None-Match: *, fresh keys) over HTTP with 1, 16 and 64 concurrent
// clients: throughput and p99 latency.
func BenchmarkConditionalPut4K(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s := benchServer(b)
			tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
			client := &http.Client{Transport: tr}
			b.Cleanup(tr.CloseIdleConnections)
			body := bytes.Repeat([]byte("x"), 4096)
			benchPuts(b, clients, func(i int64) error {
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/bench/k%d", s.srv.URL, i), bytes.NewReader(body))
				req.Header.Set("If-None-Match", "*")
				res, err := client.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					return fmt.Errorf("status %d", res.StatusCode)
				}
				return nil
			})
			st := s.e.Stats()
			if st.Commits > 0 {
				b.ReportMetric(float64(st.Updates)/float64(st.Commits), "updates/commit")
			}
		})
	}
}

// benchPuts runs put(1) to put(b.N) from clients concurrent loops and
// reports the throughput and the p99 latency; a put that fails fails the
// benchmark.
func benchPuts(b *testing.B, clients int, put func(i int64) error) {
	var next, failed atomic.Int64
	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := put(i); err != nil {
					failed.Add(1)
					continue
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d PUTs failed", failed.Load())
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "puts/s")
	b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds())/1000, "p99-ms")
}
