//go:build linux

package failover

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
)

// consulPace is the fault pace on Consul: its elections take several
// seconds (raft_multiplier 1 is its fastest: a 1 s heartbeat timeout,
// then a vote), so a leader stays out up to 8 s, long enough for the
// others to elect a new one, and each fault gets a 12 s slot.
const (
	consulSlot   = 12 * time.Second
	consulOutage = 8 * time.Second
)

// startConsul starts a ConsulCluster from the binary .ci/run builds
// ($LATCHKEY_TEST_CONSUL_BIN). Without it the test is skipped, or fails
// under CI=true.
func startConsul(t *testing.T) *ConsulCluster {
	t.Helper()
	bin := testutil.Peer(t, ConsulBinEnv, "the consul v1.16.3 executable (.ci/run builds it)")
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "consul.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log.Name()); err == nil && len(b) > 0 {
				tail := b[max(0, len(b)-8<<10):]
				t.Logf("consul log (tail):\n%s", tail)
			}
		}
	})
	start := time.Now()
	c, err := StartConsulCluster(context.Background(), ConsulOptions{Dir: dir, Bin: bin, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Logf("consul cluster up in %v: %v", time.Since(start).Round(time.Millisecond), c)
	return c
}

// TestFailoverConsul runs the workloads on a real three-server Consul
// cluster (consulstore with all three addresses, through proxies) while
// the leader is killed and restarted, stopped and continued, cut off from
// the other servers and healed, and the clients are cut off mid-request,
// and checks every promise (and, last, that the checkers catch a broken
// counter on this cluster). By default it is one 48-second run (seed 1,
// each fault once); with -failover.duration it runs 120-second runs with
// seeds from -failover.seed on until the duration is spent.
func TestFailoverConsul(t *testing.T) {
	c := startConsul(t)
	type run struct {
		seed uint64
		d    time.Duration
	}
	var runs []run
	if *duration <= 0 {
		runs = []run{{max(*seed, 1), 4 * consulSlot}}
	} else {
		for i, left := uint64(0), *duration; left > 0; i, left = i+1, left-2*time.Minute {
			runs = append(runs, run{*seed + i, min(left, 2*time.Minute)})
		}
	}
	var total Report
	for _, r := range runs {
		rep, err := Run(context.Background(), c, RunOptions{Seed: r.seed, Duration: r.d, Slot: consulSlot, Outage: consulOutage})
		if err != nil {
			t.Fatalf("seed %d: %v", r.seed, err)
		}
		logRun(t, rep)
		late := c.logLiveness(t, rep, time.Second)
		t.Logf("liveness: %d of %d faults stalled a workload past the cluster's own recovery plus one TTL", late, len(rep.Faults))
		if rep.Holdings == 0 || rep.Counter.Acked == 0 || len(rep.Faults) < len(KindsFor(c)) {
			t.Errorf("seed %d: the run did too little to prove anything: %v", r.seed, rep)
		}
		total.Merge(rep)
	}
	t.Logf("total: %v", &total)
	t.Run("CatchesLostUpdates", func(t *testing.T) { catchesLostUpdates(t, c) })
}

// catchesLostUpdates breaks the counter on purpose (a read and an
// unconditional write instead of cas.Update) and expects the checkers to
// report the increments it loses, through the same history and read-back
// from Consul as the runs (on their cluster, to save starting another).
func catchesLostUpdates(t *testing.T, c *ConsulCluster) {
	rep, err := Run(context.Background(), c, RunOptions{Seed: 1, Duration: 3 * time.Second, Faults: []string{}, Incrementers: 8, unconditional: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broken run: %v", rep)
	if rep.Counter.Lost == 0 {
		t.Fatalf("unconditional increments lost nothing the checker saw: %v", rep)
	}
}

// logLiveness logs, after each fault, how long the cluster took to have
// an available leader again (its recovery: the election, or the end of a
// stop too short for one; for cut-clients the cut itself) and by how much
// each workload's stall exceeded that recovery plus one lock TTL, the
// issue's goal. It returns the number of faults that missed the goal.
func (c *ConsulCluster) logLiveness(t *testing.T, rep *Report, ttl time.Duration) (late int) {
	t.Helper()
	for i, f := range rep.Faults {
		recovery := f.Heal - f.Start
		if back, lost := c.LeaderBack(rep.Base.Add(f.Start), rep.Base.Add(f.Heal)); lost {
			recovery = back.Sub(rep.Base) - f.Start
		}
		ls, cs := rep.LeaseStall[f.Kind][rep.kindIndex(i)], rep.CountStall[f.Kind][rep.kindIndex(i)]
		goal := recovery + ttl
		if ls > goal || cs > goal {
			late++
		}
		t.Logf("  %s at %v: leader available again after %v; lease stall %v, counter stall %v (goal %v)", f.Kind, f.Start.Round(time.Millisecond),
			recovery.Round(time.Millisecond), ls.Round(time.Millisecond), cs.Round(time.Millisecond), goal.Round(time.Millisecond))
		t.Logf("    leader changes: %s", c.LeaderChanges(rep.Base, rep.Base.Add(f.Start-time.Second), rep.Base.Add(f.Start+max(ls, cs, f.Heal-f.Start)+time.Second)))
	}
	return late
}
