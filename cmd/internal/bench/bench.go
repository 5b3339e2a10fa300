package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Bench bounds.
const (
	benchMaxDuration = 10 * time.Minute
	benchMaxClients  = 1024
	benchMaxValue    = 512 << 10
)

// benchConfig is the bench command line.
type benchConfig struct {
	url, token         string
	httpClient         string
	etcd, etcdGateway  string
	serverPID, etcdPID int
	keys, clients      string
	waiters            string
	lock               bool
	dur                time.Duration
	durSet             bool // --duration was given
	ops                int64
	size               int
	queue              bool
	q                  queueBenchConfig
	updateProcs        string
	worker             updateWorkerConfig
}

func benchFlags(cfg *benchConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.url, "url", "", "latchkey (or Consul) server `URL` to measure (default: start `latchkey serve` as a child process on a temporary directory, fsync on)")
	fs.StringVar(&cfg.httpClient, "http-client", benchClientLean, "the bench's HTTP `client` for --url or the child server: lean (synchronous HTTP/1.1 on keep-alive connections, net/http's response parser) or net/http (net/http's Transport, as consul/api uses)")
	fs.StringVar(&cfg.token, "token", "", "Consul ACL `TOKEN` for --url (default $CONSUL_HTTP_TOKEN)")
	fs.StringVar(&cfg.etcd, "etcd", "", "also measure etcd at `HOST:PORT` through its Go client (clientv3, gRPC) and print the ratio")
	fs.StringVar(&cfg.etcdGateway, "etcd-gateway", "", "also measure etcd through its v3 JSON gateway at `URL` (much slower than gRPC; rows labelled etcd-json)")
	fs.IntVar(&cfg.serverPID, "server-pid", 0, "`PID` of the --url server, for its CPU per op (default: found by its loopback port)")
	fs.IntVar(&cfg.etcdPID, "etcd-pid", 0, "`PID` of etcd, for its CPU per op (default: found by its loopback port)")
	fs.StringVar(&cfg.clients, "clients", "1,16,64", "comma-separated concurrent client `counts`")
	fs.StringVar(&cfg.keys, "keys", "distinct,hot", "key `patterns`: distinct (read + CAS on a key of one's own), hot (read + CAS on one shared key), create (create-only writes of fresh keys), update (cas.Update of one shared key, a store client each)")
	fs.BoolVar(&cfg.lock, "lock", false, "measure lock handoff instead (release → next holder acquires), with --waiters contenders")
	fs.StringVar(&cfg.waiters, "waiters", "2,8,32", "with --lock: comma-separated waiter `counts`")
	fs.BoolVar(&cfg.queue, "queue", false, "measure lock run waiters queued on one lock of --store instead (default --waiters 10,50,100)")
	fs.StringVar(&cfg.q.store, "store", "", "with --queue: the store `URL` the lock runs use")
	fs.DurationVar(&cfg.q.ttl, "ttl", 15*time.Second, "with --queue: the lock runs' --ttl")
	fs.DurationVar(&cfg.q.hold, "hold", 3*time.Second, "with --queue: how long each waiter holds the lock once it has it")
	fs.DurationVar(&cfg.q.window, "window", 20*time.Second, "with --queue: how long requests are counted while the first holder holds")
	fs.IntVar(&cfg.q.handoffs, "handoffs", 6, "with --queue: how many handoffs to time (the other waiters are then stopped)")
	fs.Float64Var(&cfg.q.kill, "kill", 0.2, "with --queue: also run with this `FRACTION` of the waiters killed (SIGKILL) at random while they wait (0: do not)")
	fs.StringVar(&cfg.q.pollBudget, "poll-budget", "", "with --queue: the lock runs' --poll-budget `RATE`")
	fs.BoolVar(&cfg.q.noQueue, "no-queue", false, "with --queue: run the lock runs with --no-queue (the free-for-all, for comparison)")
	fs.BoolVar(&cfg.q.noWatch, "no-watch", false, "with --queue: hide the store's native watch from the lock runs, so they poll (the directory store on Linux has one)")
	fs.StringVar(&cfg.updateProcs, "update-procs", "", "run the update pattern with separate processes instead, one per client: comma-separated process `counts` (e.g. 1,16,64); with --etcd also etcdstore and etcd's concurrency.STM")
	fs.StringVar(&cfg.worker.kind, "update-worker", "", "internal: run as one worker `process` of --update-procs")
	fs.StringVar(&cfg.worker.key, "update-key", "", "internal: the `key` of an --update-worker")
	fs.DurationVar(&cfg.dur, "duration", 5*time.Second, fmt.Sprintf("length of each measurement (at most 10m); when not given, --update-procs measurements of %d or more processes last %v", updateLongProcs, updateLongDuration))
	fs.Int64Var(&cfg.ops, "ops", 0, "stop each measurement after `N` applied writes (0: run for --duration)")
	fs.IntVar(&cfg.size, "value-size", 128, "value size in `bytes` (at most 512 KiB)")
	return fs
}

// Run is `latchkey bench ARGS`: it parses args, prints -h's help to
// e.Stdout and runs the measurements the flags ask for (or, with the
// internal --update-worker, one worker process of --update-procs).
func Run(ctx context.Context, e *Env, args []string) error {
	var cfg benchConfig
	fs := benchFlags(&cfg)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		benchUsage(e.Stdout, fs)
		return nil
	case err != nil:
		return usagef("bench: %v", err)
	case fs.NArg() > 0:
		return usagef("bench: unexpected argument %q", fs.Arg(0))
	case cfg.dur <= 0 || cfg.dur > benchMaxDuration:
		return usagef("bench: --duration %v: want more than 0 and at most %v", cfg.dur, benchMaxDuration)
	case cfg.size < 0 || cfg.size > benchMaxValue:
		return usagef("bench: --value-size %d: want 0 to %d", cfg.size, benchMaxValue)
	case cfg.ops < 0:
		return usagef("bench: --ops %d: want 0 or more", cfg.ops)
	case cfg.httpClient != benchClientLean && cfg.httpClient != benchClientNetHTTP:
		return usagef("bench: --http-client %q: want %s or %s", cfg.httpClient, benchClientLean, benchClientNetHTTP)
	}
	if cfg.token == "" {
		cfg.token = e.Getenv("CONSUL_HTTP_TOKEN")
	}
	cfg.durSet = flagGiven(fs, "duration")
	if cfg.worker.kind != "" {
		w := cfg.worker
		w.base, w.token, w.etcd = strings.TrimSuffix(cfg.url, "/"), cfg.token, cfg.etcd
		return runUpdateWorker(ctx, e, w, cfg.dur, cfg.size)
	}
	if cfg.updateProcs != "" {
		counts, err := benchCounts("--update-procs", cfg.updateProcs)
		if err != nil {
			return err
		}
		return runUpdateProcsBench(ctx, e, cfg, counts)
	}
	if cfg.lock {
		return runLockBench(ctx, e, cfg)
	}
	if cfg.queue {
		waiters := "10,50,100"
		if flagGiven(fs, "waiters") {
			waiters = cfg.waiters
		}
		counts, err := benchCounts("--waiters", waiters)
		if err != nil {
			return err
		}
		return runQueueBench(ctx, e, counts, cfg.q)
	}
	scenarios, err := benchScenarios(cfg.keys, cfg.clients)
	if err != nil {
		return err
	}
	maxClients := 0
	for _, s := range scenarios {
		maxClients = max(maxClients, s.clients)
	}
	hc := benchHTTPClient(maxClients)
	ts, closeTargets, err := openBenchTargets(ctx, e, cfg, hc, maxClients)
	if err != nil {
		return err
	}
	defer closeTargets()
	prefix := benchPrefix()
	fmt.Fprintf(e.Stdout, "durable CAS writes, %d-byte values, %v per measurement, keys under %s/\n\n", cfg.size, cfg.dur, prefix)
	results, err := runBenchTable(ctx, e.Stdout, hc, ts, scenarios, cfg, prefix)
	if err != nil {
		return err
	}
	printBenchRatios(e.Stdout, ts, results)
	return nil
}

// flagGiven reports whether the command line set the flag name (some
// defaults depend on the measurement).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// benchTargetSet is the latchkey target first, then its peers, each with
// the meter of its server process (nil when not on this machine).
type benchTargetSet struct {
	targets []benchTarget
	meters  []cpuMeter
}

func benchHTTPClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 30 * time.Second,
	}}
}

func benchPrefix() string {
	var b [6]byte
	rand.Read(b[:])
	return "latchkey-bench/" + hex.EncodeToString(b[:])
}

// openBenchTargets starts or connects to every target the command line
// names. close stops what it started.
func openBenchTargets(ctx context.Context, e *Env, cfg benchConfig, hc *http.Client, conns int) (benchTargetSet, func(), error) {
	var set benchTargetSet
	var closers []func()
	closeAll := func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	srv, err := openServer(ctx, e, cfg.url)
	if err != nil {
		return set, nil, err
	}
	closers = append(closers, srv.stop)
	base, pid := srv.url, cmp.Or(srv.pid, cfg.serverPID)
	var client benchHTTP = &netHTTPClient{base: base, token: cfg.token, c: hc}
	clientName := benchClientNetHTTP
	if host, ok := strings.CutPrefix(base, "http://"); ok && cfg.httpClient == benchClientLean {
		lean := newLeanHTTPClient(host, cfg.token, conns)
		closers = append(closers, lean.close)
		client, clientName = lean, benchClientLean
	}
	fmt.Fprintf(e.Stdout, "latchkey bench: latchkey through the bench's %s HTTP client (--http-client)\n", clientName)
	set.add(&consulTarget{base: base, token: cfg.token, c: client}, pid)
	if cfg.etcd != "" {
		ep := strings.TrimPrefix(strings.TrimPrefix(cfg.etcd, "http://"), "https://")
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			closeAll()
			return set, nil, failf("bench: etcd at %s: %v", ep, err)
		}
		closers = append(closers, func() { c.Close() })
		set.add(&etcdTarget{endpoint: ep, c: c}, cfg.etcdPID)
	}
	if cfg.etcdGateway != "" {
		set.add(&etcdGatewayTarget{base: strings.TrimSuffix(cfg.etcdGateway, "/"), c: hc}, cfg.etcdPID)
	}
	return set, closeAll, nil
}

// add appends t with the meter of process pid, or of the process found
// listening on t's address when pid is 0.
func (s *benchTargetSet) add(t benchTarget, pid int) {
	if pid == 0 {
		pid, _ = listenerPID(t.addr())
	}
	var m cpuMeter
	if pid > 0 {
		m = func() (time.Duration, error) { return processCPU(pid) }
	}
	s.targets = append(s.targets, t)
	s.meters = append(s.meters, m)
}

const benchRow = "%-9s %-9s %7s %9s %11s %9s %9s %10s %11s %9s %9s\n"

// runBenchTable measures every scenario on every target in turn and
// prints a row for each.
func runBenchTable(ctx context.Context, w io.Writer, hc *http.Client, ts benchTargetSet, scenarios []benchScenario, cfg benchConfig, prefix string) ([]benchResult, error) {
	val := make([]byte, cfg.size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	fmt.Fprintf(w, benchRow, "target", "keys", "clients", "ops/s", "attempts/s", "p50", "p99", "conflicts", "upd/commit", "srv/op", "cli/op")
	var results []benchResult
	for _, sc := range scenarios {
		for i, t := range ts.targets {
			before, hasStats := commitStats(ctx, hc, t)
			r, err := measure(ctx, t, ts.meters[i], sc, cfg.dur, cfg.ops, val, prefix)
			if err != nil {
				return nil, err
			}
			batch := "-"
			if after, ok := commitStats(ctx, hc, t); ok && hasStats {
				if pc, ok := after.perCommit(before); ok {
					r.perCommit = pc
					batch = fmt.Sprintf("%.1f", r.perCommit)
				}
			}
			results = append(results, r)
			fmt.Fprintf(w, benchRow, r.target, sc.keys, strconv.Itoa(sc.clients),
				fmt.Sprintf("%.0f", r.opsPerSec()), fmt.Sprintf("%.0f", r.attemptsPerSec()),
				fmtLatency(r.p50), fmtLatency(r.p99), strconv.FormatInt(r.conflicts, 10), batch,
				fmtCPU(r.cpuPerOp(r.serverCPU)), fmtCPU(r.cpuPerOp(r.clientCPU)))
		}
	}
	return results, nil
}

// printBenchRatios prints latchkey / peer for every row and peer.
func printBenchRatios(w io.Writer, ts benchTargetSet, results []benchResult) {
	n := len(ts.targets)
	for p := 1; p < n; p++ {
		peer := ts.targets[p].name()
		fmt.Fprintf(w, "\nlatchkey / %s (ratio of applied ops/s; above 1: latchkey is faster)\n", peer)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "keys\tclients\tlatchkey ops/s\t%s ops/s\tratio\tp99 latchkey\tp99 %s\tsrv/op latchkey\tsrv/op %s\t\n", peer, peer, peer)
		for i := 0; i+n-1 < len(results); i += n {
			l, o := results[i], results[i+p]
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t\n", l.scenario.keys, l.scenario.clients,
				l.opsPerSec(), o.opsPerSec(), l.opsPerSec()/o.opsPerSec(), fmtLatency(l.p99), fmtLatency(o.p99),
				fmtCPU(l.cpuPerOp(l.serverCPU)), fmtCPU(o.cpuPerOp(o.serverCPU)))
		}
		tw.Flush()
	}
}

// commitStats reads the counters of a latchkey target's /-/metrics; ok
// is false for other servers (etcd, a real Consul).
func commitStats(ctx context.Context, hc *http.Client, t benchTarget) (serverCounters, bool) {
	ct, isConsul := t.(*consulTarget)
	if !isConsul {
		return serverCounters{}, false
	}
	return readServerCounters(ctx, hc, ct.base, ct.token)
}

func benchScenarios(keys, clients string) ([]benchScenario, error) {
	var out []benchScenario
	for _, k := range strings.Split(keys, ",") {
		k = strings.TrimSpace(k)
		if k != benchDistinct && k != benchHot && k != benchCreate && k != benchUpdate {
			return nil, usagef("bench: --keys %q: want distinct, hot, create or update (comma-separated)", k)
		}
		counts, err := benchCounts("--clients", clients)
		if err != nil {
			return nil, err
		}
		for _, n := range counts {
			out = append(out, benchScenario{keys: k, clients: n})
		}
	}
	return out, nil
}

// benchCounts parses a comma-separated list of counts from 1 to
// benchMaxClients.
func benchCounts(flagName, list string) ([]int, error) {
	var out []int
	for _, c := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > benchMaxClients {
			return nil, usagef("bench: %s %q: want counts from 1 to %d", flagName, c, benchMaxClients)
		}
		out = append(out, n)
	}
	return out, nil
}

// benchChild is a `latchkey serve` the bench started as a child process,
// so that its CPU time is its own (or, from openServer, the --url server).
type benchChild struct {
	url  string
	pid  int
	stop func()
}

// openServer returns the latchkey server to measure: --url's (pid 0,
// stop does nothing), or else latchkey serve started as a child process
// and announced on stdout.
func openServer(ctx context.Context, e *Env, url string) (*benchChild, error) {
	if url != "" {
		return &benchChild{url: strings.TrimSuffix(url, "/"), stop: func() {}}, nil
	}
	child, err := startBenchServer(ctx, e)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.Stdout, "latchkey bench: latchkey serve (pid %d) at %s (temporary data directory, fsync on)\n", child.pid, child.url)
	return child, nil
}

// startBenchServer starts this executable as `latchkey serve` on a
// temporary data directory and a free loopback port, fsync on, with no
// LATCHKEY_* setting of the caller's environment.
func startBenchServer(ctx context.Context, e *Env) (*benchChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "latchkey-bench-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "serve", "--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error")
	for _, kv := range e.Environ() {
		if !strings.HasPrefix(kv, "LATCHKEY_") || strings.HasPrefix(kv, "LATCHKEY_TEST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// The server's start-up notices (S3 endpoint, credentials) are not the
	// bench's output; they are shown only if it does not start.
	var errb bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &errb, n: 4 << 10}
	cmd.SysProcAttr = benchChildAttr()
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start latchkey serve: %w", err)
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, out)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		stop()
		return nil, fmt.Errorf("bench: latchkey serve did not start (it said %q; stderr %q)", strings.TrimSpace(line), strings.TrimSpace(errb.String()))
	}
	return &benchChild{url: strings.Fields(line[i:])[0], pid: cmd.Process.Pid, stop: stop}, nil
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if keep := min(len(p), l.n); keep > 0 {
		l.w.Write(p[:keep])
		l.n -= keep
	}
	return len(p), nil
}

func fmtCPU(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}

func fmtLatency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
}

func benchUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: latchkey bench [flags]

Measure durable compare-and-set writes through the Consul KV HTTP API:
applied writes per second, attempts/s, p50 and p99 latency per attempt,
and CPU per applied write of the server process (srv/op) and of this
client (cli/op), for each key pattern and client count. Without --url it
starts latchkey serve as a child process on a temporary directory (fsync
on) and measures that.

With --etcd HOST:PORT it runs the same workload against etcd through etcd's
own Go client (clientv3 over gRPC: Get, then Txn comparing mod_revision, as
etcd users do) and prints the latchkey/etcd ratio of every row. CPU per op
is read from /proc/PID/stat for a server on this machine (found by its
loopback port, or given with --server-pid / --etcd-pid). For example:

  etcd --data-dir "$(mktemp -d)" --listen-client-urls http://127.0.0.1:2379 \
       --advertise-client-urls http://127.0.0.1:2379 &
  latchkey bench --etcd 127.0.0.1:2379

Key patterns (every write carries a fresh value, so no server can skip it
as an identical rewrite):
  distinct  each client reads its own key and CASes it (?cas=ModifyIndex;
            etcd mod_revision; create-only the first time): no contention
  hot       every client reads one shared key and CASes it; most attempts
            lose, ops/s counts the winners
  create    each client creates fresh keys (?cas=0, etcd create_revision =
            0): one durable write per request, no read
  update    every client runs the library's cas.Update on one shared key
            through a store client of its own (consulstore against
            latchkey, etcdstore against etcd), as separate programs would:
            lost races are retried after its backoff. ops/s counts updates,
            attempts/s the function's calls, conflicts the attempts that
            lost; p50/p99 are per update. The store clients use net/http
            (consulstore) and gRPC (etcdstore), whatever --http-client says

The latchkey rows go through the bench's lean HTTP/1.1 client by default
(--http-client lean): one keep-alive connection per client, each request
written and its answer read (net/http's response parser) on the client's
goroutine. --http-client net/http uses net/http's Transport instead, as
consul/api does; it costs the bench about twice the CPU per request, which
on a small machine is taken from the server under test.

Against a latchkey server, upd/commit is how many engine updates shared one
durable commit (one fsync round) during the measurement: group commit at
work. It reads the server's /-/metrics.

--lock measures lock handoff instead: --waiters contenders loop on one lock
(the official Consul client's api.Lock against latchkey, etcd's
concurrency.Mutex with --etcd); each holds it briefly and releases. It
reports handoff latency (release → next holder acquired) p50/p99, handoffs
per second, and requests per second per waiter.

--update-procs N,M,... runs the update pattern with separate processes
instead of goroutines: for each count it starts that many worker processes
of this executable, each running cas.Update in a loop on one shared key
through a store client of its own (with --etcd, the same against etcd
through etcdstore, and etcd's own concurrency.STM, which retries at once),
starts them together, and reports updates/s (and as a share of one
process's), attempts per update, p50/p99/max per update across all
processes, the spread (the slowest process's updates over the mean) and
each process's count, and, last, req/upd: the requests the latchkey
server answered during the run (its /-/metrics, all but the /-/
endpoints) per update done ("-" for etcd, or a --url server whose
metrics the bench cannot read). Afterwards the key must count exactly the
updates done. Without --duration, counts of 32 processes or more run 12s
each (at 64 processes on a small machine each does only a few updates in
5s, too few for its share to mean anything). For example:

  latchkey bench --update-procs 1,16,64 --etcd 127.0.0.1:2379

--queue measures waiting with lock run itself: for each --waiters count N
it starts a holder and then N lock run processes on one lock of --store
(one after another, each once the one before has its ticket), counts the
requests all of them send while the holder holds (--window), lets the
holder go and times --handoffs handoffs (a holder's CMD ending → the next
holder's CMD starting, p50/p99/max), and checks that the holders came in
arrival order. With --kill F it does it again with a fraction F of the
waiters killed (SIGKILL) at random while they wait. --no-queue runs the
same with lock run --no-queue; --no-watch makes a store with a native
watch (the directory store) poll. For example:

  latchkey bench --queue --store file:///tmp/bench-store --no-watch --waiters 10

Each measurement is bounded by --duration (at most 10m). Keys are left
under latchkey-bench/<random>/ on the target.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
