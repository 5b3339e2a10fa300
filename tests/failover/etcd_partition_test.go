//go:build linux

package failover

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestPartitionedLeaderIsReplaced cuts the leader off from the other
// members on the peer links (the peer proxies), and requires that the
// majority elects another leader, that a client of every member keeps
// incrementing within a bound (a request to the cut-off member is
// refused for want of a leader, or given up after the attempt timeout),
// and that after the heal the old leader catches up.
func TestPartitionedLeaderIsReplaced(t *testing.T) {
	ctx := context.Background()
	c, k, old := startCounter(t, "partition/")
	c.Partition(old)
	cut := time.Now()
	healed := false
	defer func() {
		if !healed {
			c.HealPartition()
		}
	}()
	bound := 250*time.Millisecond + etcdAttemptTimeout + 2*time.Second
	var slowest time.Duration
	for time.Since(cut) < 4*time.Second {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		t0 := time.Now()
		err := k.incr(cctx)
		cancel()
		slowest = max(slowest, time.Since(t0))
		if err != nil {
			t.Errorf("increment %v after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
		}
	}
	// The majority has a leader of its own; the old one has stepped down
	// (etcd's check-quorum) or still believes it leads, but not both.
	var leaders []int
	for i := range Size {
		if id, leader, err := status(ctx, c.members[i].cfg.ClientURL); err == nil && id == leader && leader != 0 {
			leaders = append(leaders, i)
		}
	}
	if len(leaders) != 1 || leaders[0] == old {
		t.Errorf("leaders during the partition of m%d: %v, want one other", old, leaders)
	}
	c.HealPartition()
	healed = true
	// The old leader catches up: a serializable read on it alone sees the
	// last value within a few seconds.
	want := fmt.Sprint(k.n)
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{c.members[old].cfg.ClientURL}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && got != want; time.Sleep(50 * time.Millisecond) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		if r, err := cl.Get(rctx, "partition/counter", clientv3.WithSerializable()); err == nil && len(r.Kvs) == 1 {
			got = string(r.Kvs[0].Value)
		}
		cancel()
	}
	t.Logf("m%d cut off: slowest increment %v (bound %v); after the heal it reads %q", old, slowest.Round(time.Millisecond), bound, got)
	if got != want {
		t.Errorf("m%d after the heal reads %q, want %q", old, got, want)
	}
	if slowest > bound {
		t.Errorf("an increment took %v, more than %v", slowest, bound)
	}
}
