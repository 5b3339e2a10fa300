package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/storeurl"
)

// BenchmarkLockRunHandoff measures lock run end to end on the directory
// store: W contenders, each a loop of `lock run` processes, hand one key
// over; the handoff is from one child's exit to the next child's start
// (so it includes the release, the next acquisition and the child's
// exec). Each child holds the lock for 20ms. Reports p50 and p99. Run with
// -benchtime=Nx: one iteration is one handoff.
func BenchmarkLockRunHandoff(b *testing.B) {
	for _, waiters := range []int{2, 8, 32} {
		b.Run(fmt.Sprintf("waiters=%d", waiters), func(b *testing.B) {
			benchLockRun(b, waiters)
		})
	}
}

func benchLockRun(b *testing.B, waiters int) {
	dir := b.TempDir()
	url := storeurl.FileURL(filepath.Join(dir, "store"))
	log := filepath.Join(dir, "log")
	child := fmt.Sprintf(`echo "s $(date +%%s%%N)" >> %[1]s; sleep 0.02; echo "e $(date +%%s%%N)" >> %[1]s`, log)
	var runs atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range waiters {
		wg.Go(func() {
			for runs.Add(1) <= int64(b.N+1) {
				// --no-queue: this measures the free-for-all of many pollers with
				// back-to-back holds; bench --queue measures the queue.
				cmd := binary(b, "lock", "run", "--store", url, "--ttl", "2s", "--no-queue", "bench", "--", "sh", "-c", child)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Errorf("lock run: %v: %s", err, out)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	lines := readLines(b, log)
	var gaps []time.Duration
	var lastEnd int64
	for _, ln := range lines {
		kind, ts, _ := strings.Cut(ln, " ")
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			b.Fatalf("log line %q", ln)
		}
		if kind == "s" && lastEnd != 0 {
			gaps = append(gaps, time.Duration(n-lastEnd))
		}
		if kind == "e" {
			lastEnd = n
		}
	}
	if len(gaps) == 0 {
		return
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds())/1000, "p99-ms")
}
