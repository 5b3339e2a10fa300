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

// Target is a cluster the workloads run against and the faults hit:
// Cluster (etcd) and ConsulCluster. Members are numbered from 0 to Size-1.
type Target interface {
	Name() string
	// WaitLeader returns the member that is leader now, waiting for one.
	WaitLeader(ctx context.Context) (int, error)
	Kill(i int)          // SIGKILL
	Restart(i int) error // after Kill, on its data
	Stop(i int) error    // SIGSTOP
	Cont(i int) error    // SIGCONT
	// CutClients cuts every workload connection off mid-request: answers
	// swallowed for mute, then the connections reset.
	CutClients(mute time.Duration)
	// Heal ends every fault and waits for a leader.
	Heal(ctx context.Context) error
	// Open opens a workload client (through the proxies) whose keys live
	// under prefix.
	Open(ctx context.Context, prefix string) (store.Store, error)
	// Value reads a key under prefix back after the run (nil if absent).
	Value(ctx context.Context, prefix, key string) ([]byte, error)
	// FencedHistory is every value a fenced key under prefix took, in the
	// store's order, with its token.
	FencedHistory(ctx context.Context, prefix, key string) ([]AcceptedWrite, error)
	// StoreURL is the URL the CLI opens the store with (through the
	// proxies), keys under prefix.
	StoreURL(prefix string) string
}

// Partitioner is a Target that can cut a member off from the others
// (clients still reach it) and heal it.
type Partitioner interface {
	Isolate(i int)
	Rejoin()
}

// RunOptions tune one Run. Zero fields take the defaults beside them.
type RunOptions struct {
	Seed     uint64        // chooses the faults' order, moments and lengths
	Duration time.Duration // of the workloads; zero: 18s. One fault per Slot, at least one of each kind.
	TTL      time.Duration // of the lock; zero: 1s
	// Slot is the time given to each fault; zero: 6s.
	Slot time.Duration
	// Outage, when set, is the longest a killed, stopped or isolated
	// leader stays out: each such fault lasts between TTL+200ms and
	// Outage. Zero: a kill lasts 0.5–2s, a stop TTL+0.2–1s.
	Outage time.Duration
	// Contenders for the lock, each on its own client (zero: 3), and
	// incrementing goroutines, split over two clients (zero: 4).
	Contenders, Incrementers int
	// Faults are the kinds to inject, in turn; nil means all of
	// faultKinds (and partition-leader when the target is a
	// Partitioner), each at least once; empty (non-nil) means none.
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
// workload client cut off from its members mid-request. A Partitioner
// also gets partition-leader: the leader cut off from the other members
// and healed.
var faultKinds = []string{"kill-leader", "stop-leader", "cut-clients"}

// slot is the default time given to each fault: it hits within the
// slot's first half and is healed within about 2 s.
const slot = 6 * time.Second

// KindsFor are the fault kinds Run injects into t by default.
func KindsFor(t Target) []string {
	if _, ok := t.(Partitioner); ok {
		return append(slices.Clone(faultKinds), "partition-leader")
	}
	return faultKinds
}

// Report is what one Run found.
type Report struct {
	Seed                   uint64
	Base                   time.Time // the run's start: the offsets below are from it
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
func Run(ctx context.Context, c Target, opts RunOptions) (*Report, error) {
	if opts.Duration <= 0 {
		opts.Duration = 18 * time.Second
	}
	if opts.Slot <= 0 {
		opts.Slot = slot
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
		opts.Faults = KindsFor(c)
	}
	prefix := fmt.Sprintf("failover/%d-%d/", opts.Seed, base.UnixNano())

	var stores []store.Store
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	open := func() (store.Store, error) {
		s, err := c.Open(ctx, prefix)
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

	if err := startMoreWorkloads(work, &wg, h, open, opts, c.StoreURL(prefix), base); err != nil {
		return nil, err
	}
	faults := inject(work, c, rng, opts, h.since, func(n int) { counterSlot.Store(int64(n)) })
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := c.Heal(ctx); err != nil {
		return nil, err
	}
	r, err := check(ctx, c, prefix, h, faults, opts)
	if r != nil {
		r.Base = base
	}
	return r, err
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
func inject(ctx context.Context, c Target, rng *rand.Rand, opts RunOptions, since func() time.Duration, nextSlot func(int)) []Fault {
	if len(opts.Faults) == 0 {
		<-ctx.Done()
		return nil
	}
	n := max(len(opts.Faults), int(opts.Duration/opts.Slot))
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
			sleep(context.Background(), outage(rng, opts, 500*time.Millisecond, 2*time.Second))
			c.Restart(leader)
		case "stop-leader":
			c.Stop(leader)
			sleep(context.Background(), outage(rng, opts, opts.TTL+200*time.Millisecond, opts.TTL+time.Second))
			c.Cont(leader)
		case "partition-leader":
			p := c.(Partitioner)
			p.Isolate(leader)
			sleep(context.Background(), outage(rng, opts, opts.TTL+200*time.Millisecond, opts.TTL+time.Second))
			p.Rejoin()
		}
		f.Heal = since()
		faults = append(faults, f)
	}
	<-ctx.Done()
	return faults
}

// outage draws how long a leader stays out: in [from, to), or in
// [TTL+200ms, opts.Outage) when that is set.
func outage(rng *rand.Rand, opts RunOptions, from, to time.Duration) time.Duration {
	if opts.Outage > 0 {
		from, to = opts.TTL+200*time.Millisecond, max(opts.Outage, opts.TTL+300*time.Millisecond)
	}
	return from + time.Duration(rng.Int64N(int64(to-from)))
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

// Name is "etcd".
func (c *Cluster) Name() string { return "etcd" }

// Open opens a workload client: etcdstore with every member's proxied
// endpoint.
func (c *Cluster) Open(ctx context.Context, prefix string) (store.Store, error) {
	return etcdstore.Open(ctx, &etcdstore.Options{Endpoints: c.ClientEndpoints(), Prefix: prefix, AttemptTimeout: etcdAttemptTimeout})
}

// Isolate cuts member i off from the others (Partition); Rejoin heals it.
func (c *Cluster) Isolate(i int) { c.Partition(i) }

// Rejoin heals every partition.
func (c *Cluster) Rejoin() { c.HealPartition() }

// Heal continues every stopped member, restarts every killed one, and
// waits for a leader.
func (c *Cluster) Heal(ctx context.Context) error {
	c.HealPartition()
	for _, m := range c.members {
		if err := m.revive(); err != nil {
			return err
		}
	}
	_, err := c.WaitLeader(ctx)
	return err
}

// check reads the keys' histories back and runs the checkers.
func check(ctx context.Context, c Target, prefix string, h *history, faults []Fault, opts RunOptions) (*Report, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &Report{Seed: opts.Seed, Faults: faults, Holdings: len(h.holdings), FencedRefused: h.fencedErrors, ErrorSamples: h.errSamples, RunErrors: h.runErrors, HoldingList: slices.Clone(h.holdings),
		LeaseStall: map[string][]time.Duration{}, CountStall: map[string][]time.Duration{}}
	r.Violations = append(r.Violations, CheckHoldings(h.holdings)...)

	writes, err := c.FencedHistory(ctx, prefix, "fenced")
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
		v, err := c.Value(ctx, prefix, k)
		if err != nil {
			return nil, err
		}
		cr := CheckCounter(h.increments[k], ParseCounter(v))
		r.Counter.add(cr)
		for _, v := range cr.Violations {
			r.Violations = append(r.Violations, Violation{v.Kind, k + ": " + v.What})
		}
	}

	if err := checkMore(h, faults, opts, r); err != nil {
		return nil, err
	}

	// Until the workloads' end, not the check's.
	addStalls(r.LeaseStall, faults, opts.Duration, h.fencedOK)
	addStalls(r.CountStall, faults, opts.Duration, h.incOK)
	return r, nil
}

// client is a direct client of every member, for reading back.
func (c *Cluster) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// Value reads key under prefix back from etcd.
func (c *Cluster) Value(ctx context.Context, prefix, key string) ([]byte, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resp, err := cl.Get(ctx, prefix+key)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0].Value, nil
}

// FencedHistory returns every value the key ever took, in revision order,
// with the token the writer put in it ("c<id> t<token> w<seq>"): etcd's
// own history, watched from revision 1.
func (c *Cluster) FencedHistory(ctx context.Context, prefix, key string) ([]AcceptedWrite, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	key = prefix + key
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
