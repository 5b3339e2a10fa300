package publishtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
)

// Bench publishes 100 objects of 1 MiB per iteration on a store of h and
// reports objects/s, MB/s and the commit step's own latency (manifest
// write, the check that every object is still there, and the pointer CAS).
// The store must take values of 1 MiB (Consul KV stops at 512 KiB).
func Bench(b *testing.B, h Harness) {
	s := h.New(b)
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 1<<20)
	var commit time.Duration
	b.SetBytes(100 << 20)
	for i := 0; b.Loop(); i++ {
		w, err := publish.Begin(ctx, s, "bench", nil)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 100; j++ {
			if err := w.Put(ctx, fmt.Sprintf("obj-%03d", j), bytes.NewReader(body)); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if _, err := w.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		commit += time.Since(start)
		b.StopTimer()
		if _, err := publish.GC(ctx, s, "bench", &publish.GCOptions{Grace: time.Nanosecond}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "objects/s")
	b.ReportMetric(float64(commit.Microseconds())/float64(b.N), "commit-µs")
}
