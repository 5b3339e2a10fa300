package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// bench --queue: N lock run processes wait on one lock. The waiting lock
// runs count their own requests (every request a lock run sends is at the
// lock's keys: the record, its epoch counter, its queue) when the hidden
// variable benchCountEnv names a directory, writing the running count to
// a file of their own ten times a second; benchNoWatchEnv hides the
// store's native watch, so that a directory store polls as an object
// store must.
const (
	benchCountEnv   = "LATCHKEY_BENCH_COUNT_DIR"
	benchNoWatchEnv = "LATCHKEY_BENCH_NO_WATCH"
)

// Instrument wraps lock run's store as the bench variables (read with
// getenv) ask.
func Instrument(getenv func(string) string, s store.Store) store.Store {
	dir, noWatch := getenv(benchCountEnv), getenv(benchNoWatchEnv) != ""
	if dir == "" && !noWatch {
		return s
	}
	c := &benchCounting{Store: s, noWatch: noWatch, stop: make(chan struct{})}
	if dir != "" {
		c.file = filepath.Join(dir, strconv.Itoa(os.Getpid()))
		go c.flushEvery(100 * time.Millisecond)
	}
	return c
}

// benchCounting counts the requests sent through it.
type benchCounting struct {
	store.Store
	n       atomic.Int64
	noWatch bool
	file    string
	stop    chan struct{}
	once    sync.Once
}

func (c *benchCounting) Get(ctx context.Context, key string) (store.Entry, error) {
	c.n.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *benchCounting) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	c.n.Add(1)
	return c.Store.Put(ctx, key, v, cond)
}

func (c *benchCounting) Delete(ctx context.Context, key string, cond store.Condition) error {
	c.n.Add(1)
	return c.Store.Delete(ctx, key, cond)
}

func (c *benchCounting) List(ctx context.Context, prefix string, o *store.ListOptions) (store.Page, error) {
	c.n.Add(1)
	return c.Store.List(ctx, prefix, o)
}

func (c *benchCounting) Capabilities() store.Capabilities {
	caps := c.Store.Capabilities()
	if _, ok := c.Store.(store.Watcher); !ok || c.noWatch {
		caps.Watch = false
	}
	return caps
}

// WaitChange passes the native watch through (each call is a request on
// a store whose watch is a long poll).
func (c *benchCounting) WaitChange(ctx context.Context, key string, last store.Version) error {
	c.n.Add(1)
	return c.Store.(store.Watcher).WaitChange(ctx, key, last)
}

func (c *benchCounting) Close() error {
	c.once.Do(func() { close(c.stop) })
	c.flush()
	return c.Store.Close()
}

func (c *benchCounting) flushEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.flush()
		}
	}
}

func (c *benchCounting) flush() {
	if c.file == "" {
		return
	}
	tmp := c.file + ".tmp"
	if os.WriteFile(tmp, []byte(strconv.FormatInt(c.n.Load(), 10)), 0o644) == nil {
		os.Rename(tmp, c.file)
	}
}

// queueBenchConfig is bench --queue's part of the command line.
type queueBenchConfig struct {
	store      string
	ttl, hold  time.Duration
	window     time.Duration
	handoffs   int
	kill       float64
	pollBudget string
	noQueue    bool
	noWatch    bool
}

// queueResult is one run of bench --queue.
type queueResult struct {
	waiters, killed int
	reqPerSec       float64
	handoffs        []time.Duration
	inOrder         bool
	order, want     []string
}

func runQueueBench(ctx context.Context, e *Env, waiters []int, qc queueBenchConfig) error {
	if qc.store == "" {
		return usagef("bench --queue: --store URL is required (s3://..., file:///dir, ...)")
	}
	mode := "queued"
	if qc.noQueue {
		mode = "no queue"
	}
	fmt.Fprintf(e.Stdout, "lock run waiters on one lock at %s (%s, TTL %v, each holds %v; requests/s counted by the waiters over %v while the first holder holds)\n\n",
		qc.store, mode, qc.ttl, qc.hold, qc.window)
	fmt.Fprintf(e.Stdout, "%-8s %-7s %-9s %-10s %-10s %-10s %-9s %s\n", "waiters", "killed", "req/s", "handoffs", "p50", "p99", "max", "order")
	for _, n := range waiters {
		for _, kill := range []bool{false, true} {
			if kill && qc.kill == 0 {
				continue
			}
			r, err := queueRun(ctx, e, n, kill, qc)
			if err != nil {
				return err
			}
			s := slices.Sorted(slices.Values(r.handoffs))
			order := "arrival order"
			if !r.inOrder {
				order = fmt.Sprintf("NOT arrival order: %v, want %v", r.order, r.want)
			}
			fmt.Fprintf(e.Stdout, "%-8d %-7d %-9.2f %-10d %-10v %-10v %-9v %s\n", n, r.killed, r.reqPerSec, len(s),
				percentile(s, 0.50).Round(time.Millisecond), percentile(s, 0.99).Round(time.Millisecond), percentile(s, 1).Round(time.Millisecond), order)
		}
	}
	return nil
}

// queueProc is one lock run process of a run.
type queueProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// queueRun starts a holder, then n waiters one after another (each once
// the previous one has its ticket), measures the waiters' requests while
// the holder holds, kills some waiters at random when kill is set, lets
// the holder go, and times the first handoffs.
func queueRun(ctx context.Context, e *Env, n int, kill bool, qc queueBenchConfig) (queueResult, error) {
	res := queueResult{waiters: n}
	dir, err := os.MkdirTemp("", "latchkey-bench-queue-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	counts, log, gate := filepath.Join(dir, "counts"), filepath.Join(dir, "log"), filepath.Join(dir, "gate")
	if err := os.Mkdir(counts, 0o755); err != nil {
		return res, err
	}
	s, err := storeurl.Open(ctx, qc.store)
	if err != nil {
		return res, failf("bench --queue: %v", err)
	}
	defer s.Close()
	key := fmt.Sprintf("latchkey-bench/queue-%d-%d", os.Getpid(), rand.Uint32())
	exe, err := os.Executable()
	if err != nil {
		return res, err
	}
	var procs []*queueProc
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			select {
			case <-p.done:
			case <-time.After(qc.ttl + 5*time.Second):
				p.cmd.Process.Kill()
				<-p.done
			}
		}
	}()
	start := func(name, script string) error {
		args := []string{"lock", "run", "--store", qc.store, "--ttl", qc.ttl.String(), "--holder", name, "--quiet"}
		if qc.noQueue {
			args = append(args, "--no-queue")
		}
		if qc.pollBudget != "" {
			args = append(args, "--poll-budget", qc.pollBudget)
		}
		cmd := exec.Command(exe, append(args, key, "--", "sh", "-c", script)...)
		cmd.Env = append(e.Environ(), benchCountEnv+"="+counts)
		if qc.noWatch {
			cmd.Env = append(cmd.Env, benchNoWatchEnv+"=1")
		}
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // the stopped waiters' "interrupted" lines
		cmd.SysProcAttr = benchChildAttr()              // they die with the bench (lock run then ends its CMD)
		if err := cmd.Start(); err != nil {
			return err
		}
		p := &queueProc{name: name, cmd: cmd, done: make(chan struct{})}
		go func() { cmd.Wait(); close(p.done) }()
		procs = append(procs, p)
		return nil
	}
	line := func(name, what string) string {
		return fmt.Sprintf(`echo "%s %s $(date +%%s%%N)" >> %s`, what, name, log)
	}
	if err := start("h0", line("h0", "start")+fmt.Sprintf("; while [ ! -e %s ]; do sleep 0.02; done; ", gate)+line("h0", "end")); err != nil {
		return res, err
	}
	if err := waitUntil(ctx, 30*time.Second, func() bool { return len(readLog(log)) > 0 }); err != nil {
		return res, failf("bench --queue: the first holder did not start: %v", err)
	}
	for i := range n {
		name := fmt.Sprintf("w%03d", i)
		if err := start(name, line(name, "start")+fmt.Sprintf("; sleep %g; ", qc.hold.Seconds())+line(name, "end")); err != nil {
			return res, err
		}
		if qc.noQueue {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		err := waitUntil(ctx, 30*time.Second, func() bool {
			q, err := lease.InspectQueue(ctx, s, key)
			return err == nil && len(q.Tickets) == i+1
		})
		if err != nil {
			return res, failf("bench --queue: waiter %s did not take its place in the queue: %v", name, err)
		}
	}
	time.Sleep(2 * time.Second) // let the arrivals' last writes pass
	before := sumCounts(counts)
	t0 := time.Now()
	time.Sleep(qc.window)
	res.reqPerSec = float64(sumCounts(counts)-before) / time.Since(t0).Seconds()

	alive := procs[1:]
	if kill {
		var keep []*queueProc
		for _, p := range alive {
			if rand.Float64() < qc.kill {
				p.cmd.Process.Kill()
				res.killed++
				continue
			}
			keep = append(keep, p)
		}
		alive = keep
	}
	k := min(qc.handoffs, len(alive))
	res.want = []string{"h0"}
	for _, p := range alive[:k] {
		res.want = append(res.want, p.name)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		return res, err
	}
	limit := time.Duration(k+1)*(qc.hold+2*qc.ttl) + 30*time.Second
	waitUntil(ctx, limit, func() bool { return countEnds(readLog(log)) >= k+1 })
	res.order, res.handoffs = handoffs(readLog(log))
	res.order = res.order[:min(len(res.order), k+1)]
	res.inOrder = slices.Equal(res.order, res.want)
	return res, nil
}

// logLine is one line a holder's CMD wrote: start or end, who, when.
type logLine struct {
	what, name string
	at         time.Time
}

func readLog(file string) []logLine {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ls []logLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		ns, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			continue
		}
		ls = append(ls, logLine{what: fs[0], name: fs[1], at: time.Unix(0, ns)})
	}
	return ls
}

func countEnds(ls []logLine) int {
	n := 0
	for _, l := range ls {
		if l.what == "end" {
			n++
		}
	}
	return n
}

// handoffs returns the holders in the order they started and the time
// from each one's end to the next one's start.
func handoffs(ls []logLine) ([]string, []time.Duration) {
	var order []string
	var hs []time.Duration
	var lastEnd time.Time
	for _, l := range ls {
		switch l.what {
		case "start":
			order = append(order, l.name)
			if !lastEnd.IsZero() {
				hs = append(hs, l.at.Sub(lastEnd))
			}
		case "end":
			lastEnd = l.at
		}
	}
	return order, hs
}

func sumCounts(dir string) int64 {
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		n += v
	}
	return n
}

func waitUntil(ctx context.Context, d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
