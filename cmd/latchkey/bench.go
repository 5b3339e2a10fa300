package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/latchkey/latchkey/internal/server"
)

// Bench bounds.
const (
	benchMaxDuration = 10 * time.Minute
	benchMaxClients  = 1024
	benchMaxValue    = 512 << 10
)

func runBenchCmd(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	target := fs.String("url", "", "latchkey (or Consul) server `URL` to measure (default: start a server in-process on a temporary directory, fsync on)")
	token := fs.String("token", "", "Consul ACL `TOKEN` for --url (default $CONSUL_HTTP_TOKEN)")
	etcdURL := fs.String("etcd", "", "also measure etcd at `URL` through its v3 JSON gateway and print the ratio")
	clientsFlag := fs.String("clients", "1,16,64", "comma-separated concurrent client `counts`")
	keysFlag := fs.String("keys", "distinct,hot", "key patterns: distinct (create-only CAS on fresh keys), hot (read + CAS on one key)")
	dur := fs.Duration("duration", 5*time.Second, "length of each measurement (at most 10m)")
	ops := fs.Int64("ops", 0, "stop each measurement after `N` applied writes (0: run for --duration)")
	size := fs.Int("value-size", 128, "value size in `bytes` (at most 512 KiB)")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		benchUsage(e.stdout, fs)
		return nil
	case err != nil:
		return usagef("bench: %v", err)
	case fs.NArg() > 0:
		return usagef("bench: unexpected argument %q", fs.Arg(0))
	case *dur <= 0 || *dur > benchMaxDuration:
		return usagef("bench: --duration %v: want more than 0 and at most %v", *dur, benchMaxDuration)
	case *size < 0 || *size > benchMaxValue:
		return usagef("bench: --value-size %d: want 0 to %d", *size, benchMaxValue)
	case *ops < 0:
		return usagef("bench: --ops %d: want 0 or more", *ops)
	}
	scenarios, err := benchScenarios(*keysFlag, *clientsFlag)
	if err != nil {
		return err
	}
	if *token == "" {
		*token = e.getenv("CONSUL_HTTP_TOKEN")
	}
	maxClients := 0
	for _, s := range scenarios {
		maxClients = max(maxClients, s.clients)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: maxClients, MaxIdleConnsPerHost: maxClients, IdleConnTimeout: 30 * time.Second,
	}}
	base := strings.TrimSuffix(*target, "/")
	if base == "" {
		url, stop, err := benchServer(ctx)
		if err != nil {
			return err
		}
		defer stop()
		base = url
		fmt.Fprintf(e.stdout, "latchkey bench: in-process server at %s (temporary data directory, fsync on)\n", base)
	}
	targets := []benchTarget{&consulTarget{base: base, token: *token, c: hc}}
	if *etcdURL != "" {
		targets = append(targets, &etcdTarget{base: strings.TrimSuffix(*etcdURL, "/"), c: hc})
	}
	val := make([]byte, *size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	var b [6]byte
	rand.Read(b[:])
	prefix := "latchkey-bench/" + hex.EncodeToString(b[:])
	fmt.Fprintf(e.stdout, "durable CAS writes, %d-byte values, %v per measurement, keys under %s/\n\n", *size, *dur, prefix)
	const row = "%-9s %-9s %7s %9s %11s %9s %9s %10s %12s\n"
	fmt.Fprintf(e.stdout, row, "target", "keys", "clients", "ops/s", "attempts/s", "p50", "p99", "conflicts", "upd/commit")
	var results []benchResult
	for _, sc := range scenarios {
		for _, t := range targets {
			before, hasStats := commitStats(ctx, hc, t)
			r, err := runBench(ctx, t, sc, *dur, *ops, val, prefix)
			if err != nil {
				return err
			}
			results = append(results, r)
			batch := "-"
			if after, ok := commitStats(ctx, hc, t); ok && hasStats && after.commits > before.commits {
				batch = fmt.Sprintf("%.1f", float64(after.updates-before.updates)/float64(after.commits-before.commits))
			}
			fmt.Fprintf(e.stdout, row, r.target, sc.keys, strconv.Itoa(sc.clients),
				fmt.Sprintf("%.0f", r.opsPerSec()), fmt.Sprintf("%.0f", r.attemptsPerSec()),
				fmtLatency(r.p50), fmtLatency(r.p99), strconv.FormatInt(r.conflicts, 10), batch)
		}
	}
	if len(targets) == 2 {
		fmt.Fprintln(e.stdout, "\nlatchkey / etcd (ops/s ratio; above 1: latchkey is faster)")
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "keys\tclients\tlatchkey ops/s\tetcd ops/s\tratio\tp99 latchkey\tp99 etcd\t")
		for i := 0; i+1 < len(results); i += 2 {
			l, et := results[i], results[i+1]
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t\n", l.scenario.keys, l.scenario.clients,
				l.opsPerSec(), et.opsPerSec(), l.opsPerSec()/et.opsPerSec(), fmtLatency(l.p99), fmtLatency(et.p99))
		}
		tw.Flush()
	}
	return nil
}

// engineCounters are a latchkey server's group-commit counters.
type engineCounters struct{ commits, updates float64 }

// commitStats reads the engine counters from a latchkey target's
// /-/metrics; ok is false for other servers (etcd, a real Consul).
func commitStats(ctx context.Context, hc *http.Client, t benchTarget) (engineCounters, bool) {
	ct, isConsul := t.(*consulTarget)
	if !isConsul {
		return engineCounters{}, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ct.base+server.MetricsPath, nil)
	if err != nil {
		return engineCounters{}, false
	}
	code, body, _, err := do(hc, req)
	if err != nil || code != http.StatusOK {
		return engineCounters{}, false
	}
	var c engineCounters
	var found int
	for _, line := range strings.Split(string(body), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch name {
		case "latchkey_engine_commits_total":
			c.commits, found = f, found+1
		case "latchkey_engine_updates_total":
			c.updates, found = f, found+1
		}
	}
	return c, found == 2
}

func benchScenarios(keys, clients string) ([]benchScenario, error) {
	var out []benchScenario
	for _, k := range strings.Split(keys, ",") {
		k = strings.TrimSpace(k)
		if k != "distinct" && k != "hot" {
			return nil, usagef("bench: --keys %q: want distinct, hot or both", k)
		}
		for _, c := range strings.Split(clients, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || n < 1 || n > benchMaxClients {
				return nil, usagef("bench: --clients %q: want counts from 1 to %d", c, benchMaxClients)
			}
			out = append(out, benchScenario{keys: k, clients: n})
		}
	}
	return out, nil
}

// benchServer starts a durable server in-process on a temporary directory.
func benchServer(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "latchkey-bench-")
	if err != nil {
		return "", nil, err
	}
	srv, err := server.New(server.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	stop := func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
	return "http://" + ln.Addr().String(), stop, nil
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
ops/s (applied writes), attempts/s, p50 and p99 latency per attempt, for
each key pattern and client count. Without --url it starts a latchkey
server in-process on a temporary directory (fsync on) and measures that.

With --etcd URL it runs the same measurements against etcd through its v3
JSON gateway (POST /v3/kv/txn comparing create_revision or mod_revision,
as etcd's own clients do) and prints the latchkey/etcd ratio. For example,
with Debian's etcd-server:

  etcd --data-dir "$(mktemp -d)" --listen-client-urls http://127.0.0.1:2379 \
       --advertise-client-urls http://127.0.0.1:2379 &
  latchkey bench --etcd http://127.0.0.1:2379

Key patterns:
  distinct  each client creates fresh keys of its own (Consul ?cas=0, etcd
            create_revision = 0): one durable write per request
  hot       every client reads one shared key and CASes it (?cas=N,
            mod_revision = N); most attempts lose, ops/s counts the winners

Against a latchkey server, upd/commit is how many engine updates shared one
durable commit (one fsync round) during the measurement: group commit at
work. It reads the server's /-/metrics.

Each measurement is bounded by --duration (at most 10m). Keys are left
under latchkey-bench/<random>/ on the target.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
