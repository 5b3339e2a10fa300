//go:build linux

package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/etcdstore"
)

// RunOptions tune one Run. Zero fields take the defaults beside them.
type RunOptions struct {
	Seed     uint64        // chooses the faults' order, moments and lengths
	Duration time.Duration // of the workloads; zero: 18s. One fault per 6s, at least one of each kind.
	TTL      time.Duration // of the lock; zero: 1s
	// Contenders for the lock, each on its own client (zero: 3), and
	// incrementing goroutines, split over two clients (zero: 4).
	Contenders, Incrementers int
	// Faults are the kinds to inject, in turn; nil means all of
	// faultKinds, each at least once; empty (non-nil) means none.
	Faults []string

	// LatchkeyBin, when set, is the latchkey binary that the lock run
	// workload runs (lockrun_workload.go); its CMDs' log goes beside it.
	LatchkeyBin string

	// unconditional breaks the counter on purpose (see history).
	unconditional bool
	// staleReads breaks the store on purpose (see history).
	staleReads bool
}

// faultKinds are the faults Run injects: SIGKILL of the leader and a
// restart; SIGSTOP of the leader past the lock's TTL and SIGCONT; every
// workload client cut off from its members mid-request; the leader cut
// off from the other members (the minority side) past the lock's TTL and
// healed.
var faultKinds = []string{"kill-leader", "stop-leader", "cut-clients", "partition-leader"}

// slot is the time given to each fault: it hits within the slot's first
// half and is healed within about 2 s.
const slot = 6 * time.Second

// Report is what one Run found.
type Report struct {
	Seed                   uint64
	Faults                 []Fault
	Holdings, FencedWrites int
	FencedRefused          map[string]int
	RunErrors              []Event           // Locker.Run calls that failed
	HoldingList            []Holding         // for reading a stall
	ErrorSamples           map[string]string // the first error of each kind of failed write
	Counter                CounterReport
	Violations             []Violation
	LeaseStall, CountStall map[string][]time.Duration // by fault kind
	Linearizable           []Linearizability          // of the checked keys' KV history, one per run
	Publish                PublishReport
	LockRun                LockRunReport
}

// Run drives the workloads against c for opts.Duration while the faults
// hit, heals the cluster, and checks the histories. The error is for
// failures of the harness itself; broken promises are in Violations.
func Run(ctx context.Context, c *Cluster, opts RunOptions) (*Report, error) {
	if opts.Duration <= 0 {
		opts.Duration = 18 * time.Second
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Second
	}
	opts.Contenders = cmp0(opts.Contenders, 3)
	opts.Incrementers = cmp0(opts.Incrementers, 4)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x1a7c4))
	base := time.Now()
	h := newHistory(func() time.Duration { return time.Since(base) })
	h.unconditional = opts.unconditional
	h.staleReads = opts.staleReads
	if opts.Faults == nil {
		opts.Faults = faultKinds
	}
	prefix := fmt.Sprintf("failover/%d-%d/", opts.Seed, base.UnixNano())

	var stores []store.Store
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	open := func() (store.Store, error) {
		s, err := etcdstore.Open(ctx, &etcdstore.Options{Endpoints: c.ClientEndpoints(), Prefix: prefix, AttemptTimeout: etcdAttemptTimeout})
		if err == nil {
			stores = append(stores, s)
		}
		return s, err
	}

	work, stop := context.WithTimeout(ctx, opts.Duration)
	defer stop()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for i := range opts.Contenders {
		s, err := open()
		if err != nil {
			return nil, err
		}
		r := rand.New(rand.NewPCG(opts.Seed, uint64(i)))
		wg.Go(func() {
			if err := h.contend(work, s, i, "lock", "fenced", opts.TTL, r); err != nil {
				errMu.Lock()
				firstErr = err
				errMu.Unlock()
			}
		})
	}
	var counterSlot atomic.Int64
	counterKey := func() string { return "counter/" + strconv.FormatInt(counterSlot.Load(), 10) }
	var cs [2]store.Store
	for i := range cs {
		s, err := open()
		if err != nil {
			return nil, err
		}
		cs[i] = s
	}
	for g := range opts.Incrementers {
		wg.Go(func() { h.increment(work, cs[g%2], g, counterKey) })
	}

	if err := startMoreWorkloads(work, &wg, h, open, opts, etcdURL(c, prefix), base); err != nil {
		return nil, err
	}
	faults := inject(work, c, rng, opts, h.since, func(n int) { counterSlot.Store(int64(n)) })
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := heal(ctx, c); err != nil {
		return nil, err
	}
	return check(ctx, c, prefix, h, faults, opts)
}

func cmp0(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// inject runs the faults: one per slot, kinds in an order the seed
// shuffles (each kind once before any repeats), each on the member that
// is leader at the moment. nextSlot is told when each slot starts.
func inject(ctx context.Context, c *Cluster, rng *rand.Rand, opts RunOptions, since func() time.Duration, nextSlot func(int)) []Fault {
	if len(opts.Faults) == 0 {
		<-ctx.Done()
		return nil
	}
	n := max(len(opts.Faults), int(opts.Duration/slot))
	per := opts.Duration / time.Duration(n)
	var kinds []string
	for len(kinds) < n {
		k := slices.Clone(opts.Faults)
		rng.Shuffle(len(k), func(i, j int) { k[i], k[j] = k[j], k[i] })
		kinds = append(kinds, k...)
	}
	var faults []Fault
	for i, kind := range kinds[:n] {
		nextSlot(i)
		at := per*time.Duration(i) + time.Duration(float64(per)*(0.15+0.3*rng.Float64()))
		if !sleep(ctx, at-since()) {
			break
		}
		leader, err := c.WaitLeader(ctx)
		if err != nil {
			continue
		}
		f := Fault{Kind: kind, Member: leader, Start: since()}
		switch kind {
		case "cut-clients":
			f.Member = -1
			c.CutClients(100*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond))))
		case "kill-leader":
			c.Kill(leader)
			sleep(context.Background(), 500*time.Millisecond+time.Duration(rng.Int64N(int64(1500*time.Millisecond))))
			c.Restart(leader)
		case "stop-leader":
			c.Stop(leader)
			sleep(context.Background(), opts.TTL+200*time.Millisecond+time.Duration(rng.Int64N(int64(800*time.Millisecond))))
			c.Cont(leader)
		case "partition-leader":
			c.Partition(leader)
			sleep(context.Background(), opts.TTL+200*time.Millisecond+time.Duration(rng.Int64N(int64(800*time.Millisecond))))
			c.HealPartition()
		}
		f.Heal = since()
		faults = append(faults, f)
	}
	<-ctx.Done()
	return faults
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// heal continues every stopped member, restarts every killed one, and
// waits for a leader.
func heal(ctx context.Context, c *Cluster) error {
	c.HealPartition()
	for i, m := range c.members {
		m.mu.Lock()
		down, stopped := m.cmd == nil, m.stopped
		m.mu.Unlock()
		if stopped {
			c.Cont(i)
		}
		if down {
			if err := c.Restart(i); err != nil {
				return err
			}
		}
	}
	_, err := c.WaitLeader(ctx)
	return err
}

// check reads the keys' histories back from etcd and runs the checkers.
func check(ctx context.Context, c *Cluster, prefix string, h *history, faults []Fault, opts RunOptions) (*Report, error) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &Report{Seed: opts.Seed, Faults: faults, Holdings: len(h.holdings), FencedRefused: h.fencedErrors, ErrorSamples: h.errSamples, RunErrors: h.runErrors, HoldingList: slices.Clone(h.holdings),
		LeaseStall: map[string][]time.Duration{}, CountStall: map[string][]time.Duration{}}
	r.Violations = append(r.Violations, CheckHoldings(h.holdings)...)

	writes, err := fencedHistory(ctx, cl, prefix+"fenced")
	if err != nil {
		return nil, err
	}
	r.FencedWrites = len(writes)
	r.Violations = append(r.Violations, CheckFencedWrites(writes)...)

	keys := make([]string, 0, len(h.increments))
	for k := range h.increments {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		resp, err := cl.Get(ctx, prefix+k)
		if err != nil {
			return nil, err
		}
		var final []string
		if len(resp.Kvs) > 0 {
			final = ParseCounter(resp.Kvs[0].Value)
		}
		cr := CheckCounter(h.increments[k], final)
		r.Counter.add(cr)
		for _, v := range cr.Violations {
			r.Violations = append(r.Violations, Violation{v.Kind, k + ": " + v.What})
		}
	}

	if err := checkMore(h, faults, opts, r); err != nil {
		return nil, err
	}

	for i, f := range faults {
		until := opts.Duration // the workloads' end, not the check's
		if i+1 < len(faults) {
			until = faults[i+1].Start
		}
		r.LeaseStall[f.Kind] = append(r.LeaseStall[f.Kind], Stall(f, until, h.fencedOK))
		r.CountStall[f.Kind] = append(r.CountStall[f.Kind], Stall(f, until, h.incOK))
	}
	return r, nil
}

// fencedHistory returns every value the key ever took, in revision order,
// with the token the writer put in it ("c<id> t<token> w<seq>").
func fencedHistory(ctx context.Context, cl *clientv3.Client, key string) ([]AcceptedWrite, error) {
	resp, err := cl.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	last := resp.Kvs[0].ModRevision
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ws []AcceptedWrite
	for wr := range cl.Watch(wctx, key, clientv3.WithRev(1)) {
		if err := wr.Err(); err != nil {
			return nil, err
		}
		for _, ev := range wr.Events {
			tok, err := tokenOf(ev.Kv.Value)
			if err != nil {
				return nil, fmt.Errorf("failover: %s at revision %d: %w", key, ev.Kv.ModRevision, err)
			}
			ws = append(ws, AcceptedWrite{Revision: ev.Kv.ModRevision, Token: tok})
			if ev.Kv.ModRevision >= last {
				return ws, nil
			}
		}
	}
	return nil, fmt.Errorf("failover: watch of %s ended early: %w", key, ctx.Err())
}

// tokenOf finds " t<token> " in a fenced value written by hold.
func tokenOf(v []byte) (uint64, error) {
	for _, f := range strings.Fields(string(v)) {
		if t, ok := strings.CutPrefix(f, "t"); ok {
			return strconv.ParseUint(t, 10, 64)
		}
	}
	return 0, fmt.Errorf("no token in %q", v)
}

func (r *CounterReport) add(o CounterReport) {
	r.Acked += o.Acked
	r.Refused += o.Refused
	r.Unknown += o.Unknown
	r.Applied += o.Applied
	r.Lost += o.Lost
	r.Doubled += o.Doubled
	r.RefusedApplied += o.RefusedApplied
}
