package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/etcdstore"
)

// The update pattern with separate processes (--update-procs): for each
// count N, N worker processes of this executable (bench
// --update-worker) each run one update loop on one shared key, start
// together, and report what they did; the bench prints the rate, the
// latency of an update across all of them, and how evenly they were
// served.
//
// Workers, and what one update is:
//   - latchkey: cas.Update through a consulstore of its own, against the
//     latchkey server;
//   - etcd (with --etcd): cas.Update through an etcdstore of its own;
//   - etcd-stm (with --etcd): etcd's own concurrency.STM (clientv3,
//     serializable snapshot isolation, its default), which retries a
//     transaction that lost at once, without backoff.
const (
	updateWorkerLatchkey = "latchkey"
	updateWorkerEtcd     = "etcd"
	updateWorkerSTM      = "etcd-stm"
	// updateWorkerStart bounds how long the workers of a measurement take
	// to open their clients.
	updateWorkerStart = 30 * time.Second
	// updateWorkerGrace bounds an update still in flight at the end of the
	// measurement, and a worker's exit after it.
	updateWorkerGrace = 30 * time.Second
	// updateMaxSamples bounds the latencies one worker reports.
	updateMaxSamples = 100_000
	// updateLongProcs and updateLongDuration: without --duration, a
	// measurement of updateLongProcs processes or more lasts
	// updateLongDuration, not --duration's default (at 64 processes on 2
	// cores each process does 2 to 5 updates in 4s: too few for its share
	// to mean anything).
	updateLongProcs    = 32
	updateLongDuration = 12 * time.Second
)

// updateDuration is how long a measurement of procs processes lasts:
// --duration when given, else its default below updateLongProcs
// processes and updateLongDuration from there on.
func updateDuration(cfg benchConfig, procs int) time.Duration {
	if cfg.durSet || procs < updateLongProcs {
		return cfg.dur
	}
	return max(cfg.dur, updateLongDuration)
}

// updateWorkerResult is what one worker prints, as one JSON line, at the
// end.
type updateWorkerResult struct {
	Updates  int     `json:"updates"`
	Attempts int     `json:"attempts"`
	Failed   int     `json:"failed"`
	Error    string  `json:"error,omitempty"`
	LatNS    []int64 `json:"lat_ns"`
}

// updateWorkerConfig is a worker's command line (hidden flags of bench).
type updateWorkerConfig struct {
	kind, key, base, token, etcd string
}

// runUpdateWorker is one worker process: it opens its client, says
// "ready", waits for a line on stdin, runs updates of the key until dur
// has passed (the last one is let finish, so that the count is exact),
// and prints its updateWorkerResult.
func runUpdateWorker(ctx context.Context, e *Env, w updateWorkerConfig, dur time.Duration, size int) error {
	update, closeFn, err := openUpdateWorker(ctx, w, size)
	if err != nil {
		return failf("bench: update worker %s: %v", w.kind, err)
	}
	defer closeFn()
	fmt.Fprintln(e.Stdout, "ready")
	if _, err := bufio.NewReader(e.Stdin).ReadString('\n'); err != nil {
		return failf("bench: update worker: no start signal: %v", err)
	}
	var r updateWorkerResult
	end := time.Now().Add(dur)
	for time.Now().Before(end) && ctx.Err() == nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), updateWorkerGrace)
		t0 := time.Now()
		attempts, err := update(uctx)
		el := time.Since(t0)
		cancel()
		r.Attempts += attempts
		if err != nil {
			r.Failed++
			r.Error = err.Error()
			continue
		}
		r.Updates++
		if len(r.LatNS) < updateMaxSamples {
			r.LatNS = append(r.LatNS, int64(el))
		}
	}
	return json.NewEncoder(e.Stdout).Encode(r)
}

// openUpdateWorker opens the client of a worker and returns one update of
// the key (and how many times it ran the function).
func openUpdateWorker(ctx context.Context, w updateWorkerConfig, size int) (func(context.Context) (int, error), func(), error) {
	val := make([]byte, size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	inc := benchIncrement(val)
	var s store.Store
	var err error
	switch w.kind {
	case updateWorkerLatchkey:
		u, perr := url.Parse(w.base)
		if perr != nil {
			return nil, nil, perr
		}
		s, err = consulstore.Open(ctx, &consulstore.Options{Address: u.Host, Scheme: u.Scheme, Token: w.token})
	case updateWorkerEtcd:
		s, err = etcdstore.Open(ctx, &etcdstore.Options{Endpoints: []string{w.etcd}})
	case updateWorkerSTM:
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{w.etcd}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, err
		}
		update := func(ctx context.Context) (int, error) {
			calls := 0
			_, err := concurrency.NewSTM(c, func(stm concurrency.STM) error {
				calls++
				cur := stm.Get(w.key)
				v, err := benchNext(val, []byte(cur), cur != "")
				if err != nil {
					return err
				}
				stm.Put(w.key, string(v))
				return nil
			}, concurrency.WithAbortContext(ctx))
			return calls, err
		}
		return update, func() { c.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("unknown worker %q", w.kind)
	}
	if err != nil {
		return nil, nil, err
	}
	update := func(ctx context.Context) (int, error) {
		res, err := cas.Update(ctx, s, w.key, inc, &cas.Options{MaxAttempts: 1 << 20})
		return res.Attempts, err
	}
	return update, func() { s.Close() }, nil
}

// updateProcsRow is one measurement: kind × procs.
type updateProcsRow struct {
	kind     string
	procs    int
	elapsed  time.Duration
	counts   []int
	attempts int
	lat      []time.Duration
	// perUpdate is the server's requests per update (its /-/metrics read
	// before and after the run); -1 when not known.
	perUpdate float64
}

func (r updateProcsRow) total() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

func (r updateProcsRow) rate() float64 { return float64(r.total()) / r.elapsed.Seconds() }

// spread is the slowest process's share of the updates over the mean.
func (r updateProcsRow) spread() float64 {
	if r.total() == 0 {
		return 0
	}
	return float64(slices.Min(r.counts)) * float64(len(r.counts)) / float64(r.total())
}

// runUpdateProcsBench is bench --update-procs.
func runUpdateProcsBench(ctx context.Context, e *Env, cfg benchConfig, counts []int) error {
	kinds := []string{updateWorkerLatchkey}
	if cfg.etcd != "" {
		kinds = append(kinds, updateWorkerEtcd, updateWorkerSTM)
	}
	srv, err := openServer(ctx, e, cfg.url)
	if err != nil {
		return err
	}
	defer srv.stop()
	base := srv.url
	ep := strings.TrimPrefix(strings.TrimPrefix(cfg.etcd, "http://"), "https://")
	prefix := benchPrefix()
	long := ""
	if slices.ContainsFunc(counts, func(n int) bool { return updateDuration(cfg, n) != cfg.dur }) {
		long = fmt.Sprintf(" (%v from %d processes on: no --duration given)", updateDuration(cfg, updateLongProcs), updateLongProcs)
	}
	fmt.Fprintf(e.Stdout, "one shared key updated by separate processes, each one loop of updates; %d-byte values, %v per measurement%s, keys under %s/\n", cfg.size, cfg.dur, long, prefix)
	// req/upd: the latchkey server's requests (its /-/metrics, every API
	// but the /-/ endpoints) during the run, per update done.
	hc := benchHTTPClient(1)
	defer hc.CloseIdleConnections()
	counters := func(ctx context.Context) (serverCounters, bool) { return readServerCounters(ctx, hc, base, cfg.token) }
	if _, ok := counters(ctx); !ok {
		fmt.Fprintf(e.Stdout, "(req/upd: the server's %s%s cannot be read, so it is not known)\n", base, server.MetricsPath)
	}
	fmt.Fprintln(e.Stdout)
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "target\tprocs\tupdates/s\tof 1 proc\tattempts/upd\tp50\tp99\tmax\tslowest/mean\tupdates per process (min median max)\treq/upd\t\n")
	one := map[string]float64{}
	var rows []updateProcsRow
	for _, n := range counts {
		for _, kind := range kinds {
			w := updateWorkerConfig{kind: kind, key: fmt.Sprintf("%s/update-procs-%s-%d", prefix, kind, n), base: base, token: cfg.token, etcd: ep}
			var read func(context.Context) (serverCounters, bool)
			if kind == updateWorkerLatchkey {
				read = counters
			}
			r, err := measureUpdateProcs(ctx, e, w, n, updateDuration(cfg, n), cfg.size, read)
			if err != nil {
				return err
			}
			if n == 1 {
				one[kind] = r.rate()
			}
			rows = append(rows, r)
			rel := "-"
			if o := one[kind]; o > 0 {
				rel = fmt.Sprintf("%.0f%%", 100*r.rate()/o)
			}
			reqs := "-"
			if r.perUpdate >= 0 {
				reqs = fmt.Sprintf("%.2f", r.perUpdate)
			}
			sorted := slices.Sorted(slices.Values(r.counts))
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%.2f\t%s\t%s\t%s\t%.2f\t%d %d %d\t%s\t\n", kind, n, r.rate(), rel,
				float64(r.attempts)/float64(max(r.total(), 1)),
				fmtLatency(percentile(r.lat, 0.50)), fmtLatency(percentile(r.lat, 0.99)), fmtLatency(percentile(r.lat, 1)),
				r.spread(), sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1], reqs)
		}
	}
	tw.Flush()
	for _, r := range rows {
		if r.procs > 1 {
			fmt.Fprintf(e.Stdout, "\nupdates per process, %s × %d: %s", r.kind, r.procs, strings.Trim(fmt.Sprint(r.counts), "[]"))
		}
	}
	fmt.Fprintln(e.Stdout)
	return nil
}

// measureUpdateProcs runs n workers of one kind on one key for dur and
// checks afterwards that the key counts exactly the updates they did.
// With read (nil: none), it reads the server's counters once the workers
// are ready and again once all have answered, for the requests per
// update.
func measureUpdateProcs(ctx context.Context, e *Env, w updateWorkerConfig, n int, dur time.Duration, size int, read func(context.Context) (serverCounters, bool)) (updateProcsRow, error) {
	row := updateProcsRow{kind: w.kind, procs: n, counts: make([]int, n), perUpdate: -1}
	if read == nil {
		read = func(context.Context) (serverCounters, bool) { return serverCounters{}, false }
	}
	fail := func(err error) (updateProcsRow, error) {
		return row, failf("bench: --update-procs %s × %d: %v", w.kind, n, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	type worker struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	workers := make([]worker, n)
	defer func() {
		for _, wk := range workers {
			if wk.cmd != nil && wk.cmd.Process != nil {
				wk.cmd.Process.Kill()
				wk.cmd.Wait()
			}
		}
	}()
	for i := range workers {
		cmd := exec.Command(exe, "bench", "--update-worker", w.kind, "--update-key", w.key, "--url", w.base,
			"--etcd", w.etcd, "--duration", dur.String(), "--value-size", strconv.Itoa(size))
		cmd.Env = append(e.Environ(), "CONSUL_HTTP_TOKEN="+w.token)
		cmd.SysProcAttr = benchChildAttr()
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return fail(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return fail(err)
		}
		if err := cmd.Start(); err != nil {
			return fail(err)
		}
		workers[i] = worker{cmd: cmd, stdin: in, out: bufio.NewReader(out)}
	}
	if err := eachWorker(n, updateWorkerStart, func(i int) error {
		line, err := workers[i].out.ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			return fmt.Errorf("worker %d said %q (%v)", i, line, err)
		}
		return nil
	}); err != nil {
		return fail(err)
	}
	before, readBefore := read(ctx)
	start := time.Now()
	for _, wk := range workers {
		io.WriteString(wk.stdin, "go\n")
	}
	results := make([]updateWorkerResult, n)
	if err := eachWorker(n, dur+updateWorkerGrace, func(i int) error {
		return json.NewDecoder(workers[i].out).Decode(&results[i])
	}); err != nil {
		return fail(err)
	}
	row.elapsed = time.Since(start)
	after, readAfter := read(ctx)
	for i, r := range results {
		if r.Failed > 0 {
			return fail(fmt.Errorf("worker %d: %d updates failed, the last: %s", i, r.Failed, r.Error))
		}
		row.counts[i], row.attempts = r.Updates, row.attempts+r.Attempts
		for _, ns := range r.LatNS {
			row.lat = append(row.lat, time.Duration(ns))
		}
	}
	slices.Sort(row.lat)
	if pu, ok := after.perUpdate(before, row.total()); ok && readBefore && readAfter {
		row.perUpdate = pu
	}
	if err := checkUpdateProcsCount(ctx, w, row.total()); err != nil {
		return fail(err)
	}
	return row, nil
}

// eachWorker runs f for workers 0..n-1 concurrently and returns the first
// error, or one saying they took longer than d.
func eachWorker(n int, d time.Duration, f func(int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- f(i) })
	}
	timeout := time.After(d)
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				return err
			}
		case <-timeout:
			return fmt.Errorf("the workers did not answer within %v", d)
		}
	}
	wg.Wait()
	return nil
}

// checkUpdateProcsCount fails unless the key counts exactly the updates
// the workers reported (each finished its last update before stopping).
func checkUpdateProcsCount(ctx context.Context, w updateWorkerConfig, done int) error {
	var s store.Store
	var err error
	if w.kind == updateWorkerLatchkey {
		u, _ := url.Parse(w.base)
		s, err = consulstore.Open(ctx, &consulstore.Options{Address: u.Host, Scheme: u.Scheme, Token: w.token})
	} else {
		s, err = etcdstore.Open(ctx, &etcdstore.Options{Endpoints: []string{w.etcd}})
	}
	if err != nil {
		return err
	}
	defer s.Close()
	e, err := s.Get(ctx, w.key)
	if err != nil {
		return fmt.Errorf("reading the counter: %w", err)
	}
	n, err := benchCount(e.Value)
	if err != nil {
		return err
	}
	if n != done {
		return fmt.Errorf("the counter is %d after %d updates: an update was lost or applied twice", n, done)
	}
	return nil
}
