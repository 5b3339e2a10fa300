//go:build linux

package failover

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

var (
	duration = flag.Duration("failover.duration", 0, "run the failover workloads this long in all (default: one 20s run, every fault once)")
	seed     = flag.Uint64("failover.seed", 0, "seed of the first run (default: 1)")
)

// TestFailover runs the workloads on a real three-member etcd cluster
// while the leader is killed and restarted, stopped past the lock's TTL
// and continued, cut off from the other members and healed, and while
// every client is cut off mid-request, and checks every promise. By
// default it is one 20-second run (seed 1) with every fault once; with
// -failover.duration it runs 60-second runs with seeds from
// -failover.seed on until the duration is spent.
func TestFailover(t *testing.T) {
	ctx := context.Background()
	c := startTestCluster(t, ClusterOptions{Fsync: os.Getenv("LATCHKEY_FAILOVER_FSYNC") == "1"})

	type run struct {
		seed uint64
		d    time.Duration
	}
	var runs []run
	if *duration <= 0 {
		runs = []run{{max(*seed, 1), 20 * time.Second}}
	} else {
		for i, left := uint64(0), *duration; left > 0; i, left = i+1, left-time.Minute {
			runs = append(runs, run{*seed + i, min(left, time.Minute)})
		}
	}
	bin := buildLatchkey(t)
	var total Report
	for _, r := range runs {
		rep, err := Run(ctx, c, RunOptions{Seed: r.seed, Duration: r.d, LatchkeyBin: bin})
		if err != nil {
			t.Fatalf("seed %d: %v", r.seed, err)
		}
		logRun(t, rep)
		if rep.Holdings == 0 || rep.Counter.Acked == 0 || rep.Publish.Reads == 0 || rep.LockRun.Holdings == 0 || len(rep.Faults) < len(faultKinds) {
			t.Errorf("seed %d: the run did too little to prove anything: %v", r.seed, rep)
		}
		total.Merge(rep)
	}
	t.Logf("total: %v", &total)
}

// TestFailoverCatchesLostUpdates breaks the counter on purpose (a read and
// an unconditional write instead of cas.Update) and expects the checkers
// to report the increments it loses, through the same history and
// read-back as TestFailover.
func TestFailoverCatchesLostUpdates(t *testing.T) {
	ctx := context.Background()
	c := startTestCluster(t, ClusterOptions{})
	rep, err := Run(ctx, c, RunOptions{Seed: 1, Duration: 3 * time.Second, Faults: []string{}, Incrementers: 8, unconditional: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broken run: %v", rep)
	if rep.Counter.Lost == 0 {
		t.Fatalf("unconditional increments lost nothing the checker saw: %v", rep)
	}
}

// TestFailoverCatchesStaleReads breaks the store on purpose (Gets of the
// checked keys answered from a cache up to 100 ms old) and expects the
// linearizability checker to find the recorded KV history illegal,
// through the same recording and check as TestFailover.
func TestFailoverCatchesStaleReads(t *testing.T) {
	ctx := context.Background()
	c := startTestCluster(t, ClusterOptions{})
	rep, err := Run(ctx, c, RunOptions{Seed: 1, Duration: 3 * time.Second, Faults: []string{}, staleReads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broken run: %v", rep)
	if len(rep.Linearizable) != 1 || rep.Linearizable[0].Result != porcupine.Illegal {
		t.Fatalf("stale reads went unseen: %v", rep.Linearizable)
	}
}

// logRun logs a run's summary, each fault with the stalls after it (and
// what the lock workload did around a long stall), the first error of
// each kind, and fails the test on each violation.
func logRun(t *testing.T, rep *Report) {
	t.Helper()
	t.Logf("run: %v", rep)
	for i, f := range rep.Faults {
		ls, cs := rep.LeaseStall[f.Kind][rep.kindIndex(i)], rep.CountStall[f.Kind][rep.kindIndex(i)]
		t.Logf("  fault %s of %d at %v for %v: lease stalled %v, counter %v", f.Kind, f.Member, f.Start.Round(time.Millisecond),
			(f.Heal - f.Start).Round(time.Millisecond), ls.Round(time.Millisecond), cs.Round(time.Millisecond))
		if ls > (f.Heal-f.Start)+3*time.Second {
			for _, line := range rep.Around(f.Start-time.Second, f.Start+ls) {
				t.Logf("    %s", line)
			}
		}
	}
	for _, k := range sortedKeys(rep.ErrorSamples) {
		t.Logf("  first %s error: %s", k, rep.ErrorSamples[k])
	}
	for _, v := range rep.Violations {
		t.Errorf("seed %d: %v", rep.Seed, v)
	}
}

// startTestCluster starts a Cluster in a directory of the test's (opts.Dir
// is set here), closed with the test.
func startTestCluster(t *testing.T, opts ClusterOptions) *Cluster {
	t.Helper()
	opts.Dir = t.TempDir()
	c, err := StartCluster(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// buildLatchkey builds the latchkey binary once, for the lock run
// workload, into a directory of the test's; with -race when the test is,
// so that it reuses the packages the test's build compiled.
func buildLatchkey(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "latchkey")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/latchkey/latchkey/cmd/latchkey")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build latchkey: %v\n%s", err, out)
	}
	return bin
}
