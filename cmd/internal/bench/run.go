package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
)

// Key patterns.
const (
	benchDistinct = "distinct" // read + CAS on a key of one's own
	benchHot      = "hot"      // read + CAS on one shared key
	benchCreate   = "create"   // create-only writes of fresh keys
	benchUpdate   = "update"   // cas.Update of one shared key, a store per client
)

// benchScenario is one measurement: a key pattern and a client count.
type benchScenario struct {
	keys    string // benchDistinct, benchHot, benchCreate or benchUpdate
	clients int
}

// benchResult is what one scenario measured.
type benchResult struct {
	target    string
	scenario  benchScenario
	ok        int64 // CAS writes that applied
	conflicts int64 // CAS writes refused (another client won)
	elapsed   time.Duration
	p50, p99  time.Duration // per attempt (read + CAS, one create, or one cas.Update)
	// serverCPU and clientCPU are the CPU time the target's process and
	// this process used during the measurement; -1 when unknown.
	serverCPU, clientCPU time.Duration
	perCommit            float64 // engine updates per durable commit; 0 when unknown
}

func (r benchResult) opsPerSec() float64 { return float64(r.ok) / r.elapsed.Seconds() }
func (r benchResult) attemptsPerSec() float64 {
	return float64(r.ok+r.conflicts) / r.elapsed.Seconds()
}

// cpuPerOp is cpu divided by the applied writes; -1 when unknown.
func (r benchResult) cpuPerOp(cpu time.Duration) time.Duration {
	if cpu < 0 || r.ok == 0 {
		return -1
	}
	return cpu / time.Duration(r.ok)
}

// maxBenchSamples bounds the latency samples kept per scenario.
const maxBenchSamples = 1 << 21

// cpuMeter reads a process's CPU time; it returns an error when that is
// not known (another machine, no /proc).
type cpuMeter func() (time.Duration, error)

// measure runs one scenario under the CPU meters of the server (nil:
// unknown) and of this process.
func measure(ctx context.Context, t benchTarget, server cpuMeter, sc benchScenario, dur time.Duration, maxOps int64, val []byte, prefix string) (benchResult, error) {
	s0, serr := meter(server)
	c0, cerr := selfCPU()
	r, err := runBench(ctx, t, sc, dur, maxOps, val, prefix)
	r.serverCPU, r.clientCPU = -1, -1
	if s1, err := meter(server); err == nil && serr == nil {
		r.serverCPU = s1 - s0
	}
	if c1, err := selfCPU(); err == nil && cerr == nil {
		r.clientCPU = c1 - c0
	}
	return r, err
}

func meter(m cpuMeter) (time.Duration, error) {
	if m == nil {
		return 0, errors.New("no meter")
	}
	return m()
}

// runBench runs one scenario against t for at most dur, stopping early
// after maxOps applied writes (0: no limit). Keys live under prefix; every
// write carries a value never written before (a counter in its first
// bytes), so no server can skip it as an identical rewrite.
//
//   - distinct: every client reads its own key's revision and CASes it
//     (Consul ?cas=ModifyIndex, etcd Txn on mod_revision; create-only the
//     first time): the loop every CAS user runs, without contention.
//   - hot: every client does the same on one shared key; most attempts lose
//     the race, as they must. ops/s counts the applied writes.
//   - create: every client creates fresh keys of its own (Consul cas=0, etcd
//     create_revision = 0): one durable write per request, no read.
//   - update: every client runs cas.Update on one shared key through a
//     store of its own (consulstore, etcdstore), as separate programs
//     using the library would: its backoff decides when a lost race is
//     tried again. ops/s counts updates; conflicts the attempts that lost.
func runBench(ctx context.Context, t benchTarget, sc benchScenario, dur time.Duration, maxOps int64, val []byte, prefix string) (benchResult, error) {
	res := benchResult{target: t.name(), scenario: sc}
	stores := make([]store.Store, sc.clients)
	if sc.keys == benchUpdate {
		for c := range stores {
			s, err := t.openStore(ctx)
			if err != nil {
				return res, fmt.Errorf("bench %s %s/%d: %w", t.name(), sc.keys, sc.clients, err)
			}
			defer s.Close()
			stores[c] = s
		}
	}
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var ok, conflicts atomic.Int64
	var firstErr error
	var errOnce sync.Once
	samples := make([][]time.Duration, sc.clients)
	perClient := maxBenchSamples / sc.clients
	var wg sync.WaitGroup
	start := time.Now()
	for c := range sc.clients {
		wg.Go(func() {
			v := slices.Clone(val)
			for n := 0; ctx.Err() == nil; n++ {
				stamp(v, c, n)
				t0 := time.Now()
				applied, lost, err := benchAttempt(ctx, t, stores[c], sc, prefix, c, n, v)
				if err != nil {
					if ctx.Err() == nil {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					return
				}
				if len(samples[c]) < perClient {
					samples[c] = append(samples[c], time.Since(t0))
				}
				conflicts.Add(int64(lost))
				if !applied {
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
	if sc.keys == benchUpdate {
		if err := checkUpdateCount(context.WithoutCancel(ctx), stores[0], updateKey(prefix, sc), res.ok, sc.clients); err != nil {
			return res, fmt.Errorf("bench %s %s/%d: %w", t.name(), sc.keys, sc.clients, err)
		}
	}
	all := slices.Concat(samples...)
	slices.Sort(all)
	res.p50, res.p99 = percentile(all, 0.50), percentile(all, 0.99)
	return res, nil
}

// stamp writes "client.attempt " over the start of v (as far as it
// reaches), so every value the bench writes differs from the one before.
func stamp(v []byte, client, n int) {
	s := strconv.Itoa(client) + "." + strconv.Itoa(n) + " "
	copy(v, s)
}

// benchAttempt makes one attempt of sc's pattern (update: one cas.Update
// through st) and reports whether a write applied and how many writes
// lost their race.
func benchAttempt(ctx context.Context, t benchTarget, st store.Store, sc benchScenario, prefix string, client, n int, val []byte) (applied bool, lost int, err error) {
	var key string
	switch sc.keys {
	case benchCreate:
		applied, err = t.create(ctx, fmt.Sprintf("%s/create-%d/%d/%d", prefix, sc.clients, client, n), val)
		return applied, 0, err
	case benchUpdate:
		res, err := cas.Update(ctx, st, updateKey(prefix, sc), benchIncrement(val), &cas.Options{MaxAttempts: 1 << 20})
		return err == nil, max(res.Attempts-1, 0), err
	case benchDistinct:
		key = fmt.Sprintf("%s/distinct-%d/%d", prefix, sc.clients, client)
	default:
		key = fmt.Sprintf("%s/hot-%d", prefix, sc.clients)
	}
	rev, err := t.read(ctx, key)
	if err != nil {
		return false, 0, err
	}
	applied, err = t.cas(ctx, key, val, rev)
	if err == nil && !applied {
		lost = 1
	}
	return applied, lost, err
}

func updateKey(prefix string, sc benchScenario) string {
	return fmt.Sprintf("%s/update-%d", prefix, sc.clients)
}

// benchIncrement is the update pattern's function: the value is a counter
// ("N " and then val's bytes, as long as val or the count), so every write is new and
// the count tells after the run whether an update was lost.
func benchIncrement(val []byte) cas.Func {
	return func(cur []byte, exists bool) (cas.Decision, error) {
		v, err := benchNext(val, cur, exists)
		if err != nil {
			return cas.Decision{}, err
		}
		return cas.Set(v), nil
	}
}

// benchNext is the value benchIncrement writes over cur.
func benchNext(val, cur []byte, exists bool) ([]byte, error) {
	n := 0
	if exists {
		var err error
		if n, err = benchCount(cur); err != nil {
			return nil, err
		}
	}
	count := strconv.Itoa(n+1) + " "
	v := make([]byte, max(len(val), len(count)))
	copy(v, val)
	copy(v, count)
	return v, nil
}

// benchCount reads the counter benchIncrement wrote.
func benchCount(v []byte) (int, error) {
	digits, _, _ := strings.Cut(string(v), " ")
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, fmt.Errorf("the update counter holds %.40q, not a count", v)
	}
	return n, nil
}

// checkUpdateCount fails when the update pattern's counter is below the
// updates that were acknowledged (a lost update). It may be above them by
// at most one per client: an Update cut off by the end of the measurement
// may have applied its write without hearing so.
func checkUpdateCount(ctx context.Context, s store.Store, key string, acked int64, clients int) error {
	e, err := s.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("reading the update counter: %w", err)
	}
	n, err := benchCount(e.Value)
	if err != nil {
		return err
	}
	if int64(n) < acked || int64(n) > acked+int64(clients) {
		return fmt.Errorf("the update counter is %d after %d acknowledged updates from %d clients: an update was lost or applied twice", n, acked, clients)
	}
	return nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}
