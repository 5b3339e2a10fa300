package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// benchScenario is one measurement: a key pattern and a client count.
type benchScenario struct {
	keys    string // "distinct" or "hot"
	clients int
}

// benchResult is what one scenario measured.
type benchResult struct {
	target    string
	scenario  benchScenario
	ok        int64 // CAS writes that applied
	conflicts int64 // CAS writes refused (another client won)
	elapsed   time.Duration
	p50, p99  time.Duration // per attempt (hot: read + CAS)
}

func (r benchResult) opsPerSec() float64 { return float64(r.ok) / r.elapsed.Seconds() }
func (r benchResult) attemptsPerSec() float64 {
	return float64(r.ok+r.conflicts) / r.elapsed.Seconds()
}

// maxBenchSamples bounds the latency samples kept per scenario.
const maxBenchSamples = 1 << 21

// runBench runs one scenario against t for at most dur, stopping early
// after maxOps applied writes (0: no limit). Keys live under prefix.
//
//   - distinct: every client creates fresh keys of its own with a
//     create-only CAS (Consul cas=0, etcd create_revision = 0): one durable
//     write per request, no contention.
//   - hot: every client reads one shared key's revision and CASes it (Consul
//     cas=N, etcd mod_revision = N); most attempts lose the race, as they
//     must. ops/s counts the applied writes.
func runBench(ctx context.Context, t benchTarget, sc benchScenario, dur time.Duration, maxOps int64, val []byte, prefix string) (benchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	res := benchResult{target: t.name(), scenario: sc}
	var ok, conflicts atomic.Int64
	var firstErr error
	var errOnce sync.Once
	samples := make([][]time.Duration, sc.clients)
	perClient := maxBenchSamples / sc.clients
	var wg sync.WaitGroup
	start := time.Now()
	for c := range sc.clients {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				t0 := time.Now()
				applied, err := benchAttempt(ctx, t, sc, prefix, c, n, val)
				if err != nil {
					if ctx.Err() == nil {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					return
				}
				if len(samples[c]) < perClient {
					samples[c] = append(samples[c], time.Since(t0))
				}
				if !applied {
					conflicts.Add(1)
					continue
				}
				if ok.Add(1) == maxOps {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.ok, res.conflicts = ok.Load(), conflicts.Load()
	if firstErr != nil {
		return res, fmt.Errorf("bench %s %s/%d: %w", t.name(), sc.keys, sc.clients, firstErr)
	}
	if res.ok == 0 {
		return res, errors.New("bench: no write applied")
	}
	all := slices.Concat(samples...)
	slices.Sort(all)
	res.p50, res.p99 = percentile(all, 0.50), percentile(all, 0.99)
	return res, nil
}

func benchAttempt(ctx context.Context, t benchTarget, sc benchScenario, prefix string, client, n int, val []byte) (bool, error) {
	if sc.keys == "distinct" {
		key := fmt.Sprintf("%s/distinct-%d/%d/%d", prefix, sc.clients, client, n)
		return t.create(ctx, key, val)
	}
	key := fmt.Sprintf("%s/hot-%d", prefix, sc.clients)
	rev, err := t.read(ctx, key)
	if err != nil {
		return false, err
	}
	return t.cas(ctx, key, val, rev)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}
