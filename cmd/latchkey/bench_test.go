package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil/etcdtest"
)

// benchRows returns the result rows of a bench table whose first field is
// target, each split into its 11 fields.
func benchRows(out, target string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 11 && f[0] == target {
			rows = append(rows, f)
		}
	}
	return rows
}

// benchCLI runs latchkey bench in-process; the bench starts this test
// binary as latchkey serve and as its --update-procs workers.
func benchCLI(t *testing.T) *cli {
	t.Setenv(asMain, "1")
	return &cli{t: t, env: map[string]string{}}
}

// peerRows checks that out has the latchkey / peer ratio table and n rows
// of peer, and returns those.
func peerRows(t *testing.T, out, peer string, n int) [][]string {
	t.Helper()
	if !strings.Contains(out, "latchkey / "+peer) {
		t.Fatalf("no ratio table:\n%s", out)
	}
	rows := benchRows(out, peer)
	if len(rows) != n {
		t.Fatalf("want %d %s rows:\n%s", n, peer, out)
	}
	return rows
}

// cpuField parses a srv/op or cli/op column ("123µs").
func cpuField(t *testing.T, f string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(f)
	if err != nil {
		t.Fatalf("CPU column %q: %v", f, err)
	}
	return d
}

func TestBenchAgainstChildServer(t *testing.T) {
	c := benchCLI(t)
	out := c.ok("bench", "--duration", "300ms", "--clients", "1,4", "--keys", "distinct,hot,create,update")
	rows := benchRows(out, "latchkey")
	if len(rows) != 8 {
		t.Fatalf("want 8 result rows (distinct, hot, create and update × 1 and 4 clients), got %d:\n%s", len(rows), out)
	}
	for _, f := range rows {
		if ops, err := strconv.ParseFloat(f[3], 64); err != nil || ops <= 0 {
			t.Errorf("row %q: ops/s %q", f, f[3])
		}
		if contended := (f[1] == "hot" || f[1] == "update") && f[2] != "1"; !contended && f[7] != "0" {
			t.Errorf("row %q: conflicts without contention", f)
		}
		if b, err := strconv.ParseFloat(f[8], 64); err != nil || b < 1 {
			t.Errorf("row %q: updates per commit %q", f, f[8])
		}
		// The server is a child process: its CPU is measured apart from
		// ours, and a durable write costs it some.
		if srv := cpuField(t, f[9]); srv <= 0 {
			t.Errorf("row %q: server CPU per op %v", f, srv)
		}
		cpuField(t, f[10])
	}
}

func TestBenchBadFlags(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}}
	c.fails(exitUsage, "--duration", "bench", "--duration", "11m")
	c.fails(exitUsage, "--clients", "bench", "--clients", "0")
	c.fails(exitUsage, "--keys", "bench", "--keys", "warm")
	c.fails(exitUsage, "--value-size", "bench", "--value-size", "1000000")
	c.fails(exitUsage, "--http-client", "bench", "--http-client", "curl")
}

// The etcd rows go through clientv3 (gRPC) against a real etcd: every
// pattern applies writes, distinct and create without conflicts, and each
// row has its ratio line. Each row runs 500 ms: at 200 ms an etcd row on
// a machine at load 20-30 (under -race) could apply nothing.
func TestBenchEtcdSideBySide(t *testing.T) {
	ep := etcdtest.Endpoint(t)
	c := benchCLI(t)
	out := c.ok("bench", "--duration", "500ms", "--clients", "2", "--keys", "distinct,hot,create,update", "--etcd", ep)
	for _, f := range peerRows(t, out, "etcd", 4) {
		if ops, err := strconv.ParseFloat(f[3], 64); err != nil || ops <= 0 {
			t.Errorf("no write applied against etcd: %q", f)
		}
		if f[1] != "hot" && f[1] != "update" && f[7] != "0" {
			t.Errorf("row %q: conflicts without contention", f)
		}
		// etcd runs in this process, found by its port.
		cpuField(t, f[9])
	}
	for _, keys := range []string{"distinct", "hot", "create", "update"} {
		if !regexp.MustCompile(`(?m)^\s*` + keys + `\s+2\s+\d+\s+\d+\s+[0-9.]+\s`).MatchString(out) {
			t.Errorf("no ratio row for %s:\n%s", keys, out)
		}
	}
}

// Lock handoff against the server's Consul API (api.Lock) and etcd's
// concurrency.Mutex: both hand the lock over, and waiters send requests.
func TestBenchLock(t *testing.T) {
	ep := etcdtest.Endpoint(t)
	c := benchCLI(t)
	out := c.ok("bench", "--lock", "--waiters", "2,4", "--duration", "700ms", "--etcd", ep)
	seen := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 6 || (f[0] != "latchkey" && f[0] != "etcd") {
			continue
		}
		seen[f[0]]++
		if h, err := strconv.ParseFloat(f[2], 64); err != nil || h <= 0 {
			t.Errorf("row %q: handoffs/s %q", l, f[2])
		}
		if r, err := strconv.ParseFloat(f[5], 64); err != nil || r <= 0 {
			t.Errorf("row %q: requests per waiter %q", l, f[5])
		}
	}
	if seen["latchkey"] != 2 || seen["etcd"] != 2 {
		t.Fatalf("want 2 rows each for latchkey and etcd:\n%s", out)
	}
}

// fakeEtcd implements the two etcd v3 JSON gateway calls the bench makes,
// with the request and response field names etcd 3.4's gateway uses
// (checked by hand against Debian's etcd-server 3.4.23), so the test pins
// the wire shape and the CAS semantics the bench relies on.
func fakeEtcd(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	rev := int64(1)
	mods := map[string]int64{}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v3/kv/range":
			var req struct{ Key string }
			json.NewDecoder(r.Body).Decode(&req)
			out := map[string]any{"header": map[string]any{"revision": strconv.FormatInt(rev, 10)}}
			if m, ok := mods[req.Key]; ok {
				out["kvs"] = []map[string]any{{"key": req.Key, "mod_revision": strconv.FormatInt(m, 10)}}
			}
			json.NewEncoder(w).Encode(out)
		case "/v3/kv/txn":
			var req struct {
				Compare []struct {
					Target, Result, Key string
					Create              string `json:"create_revision"`
					Mod                 string `json:"mod_revision"`
				}
				Success []struct {
					RequestPut struct{ Key, Value string } `json:"request_put"`
				}
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Compare) != 1 || len(req.Success) != 1 {
				http.Error(w, "bad txn", 400)
				return
			}
			cmp := req.Compare[0]
			if _, err := base64.StdEncoding.DecodeString(cmp.Key); err != nil || cmp.Result != "EQUAL" {
				http.Error(w, "bad compare", 400)
				return
			}
			cur := mods[cmp.Key]
			var ok bool
			switch cmp.Target {
			case "CREATE":
				ok = cmp.Create == "0" && cur == 0
			case "MOD":
				ok = cmp.Mod == strconv.FormatInt(cur, 10) && cur != 0
			default:
				http.Error(w, "bad target", 400)
				return
			}
			out := map[string]any{"header": map[string]any{"revision": strconv.FormatInt(rev, 10)}}
			if ok {
				rev++
				mods[req.Success[0].RequestPut.Key] = rev
				out["succeeded"] = true // etcd omits it when false
			}
			json.NewEncoder(w).Encode(out)
		default:
			http.NotFound(w, r)
		}
	}))
}

// --etcd-gateway keeps the JSON path, labelled as such.
func TestBenchEtcdGateway(t *testing.T) {
	etcd := fakeEtcd(t)
	defer etcd.Close()
	c := benchCLI(t)
	out := c.ok("bench", "--duration", "200ms", "--clients", "2", "--etcd-gateway", etcd.URL)
	for _, f := range peerRows(t, out, "etcd-json", 2) {
		if f[3] == "0" {
			t.Errorf("no CAS applied against the gateway: %q", f)
		}
	}
}

// The update pattern with separate processes: every worker is a process
// of its own, each target's row reports the spread, each process's count
// and (latchkey only, from its /-/metrics) the server's requests per
// update, and the key counts exactly the updates done (the bench fails
// otherwise).
func TestBenchUpdateProcs(t *testing.T) {
	ep := etcdtest.Endpoint(t)
	c := benchCLI(t)
	out := c.ok("bench", "--update-procs", "1,3", "--duration", "300ms", "--etcd", ep)
	row := regexp.MustCompile(`(?m)^\s*(latchkey|etcd|etcd-stm)\s+(\d+)\s+(\d+)\s+(\d+)%\s+([0-9.]+)\s+\S+\s+\S+\s+\S+\s+([0-9.]+)\s+(\d+) (\d+) (\d+)\s+(\S+)\s*$`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 6 {
		t.Fatalf("want 6 rows (latchkey, etcd and etcd-stm × 1 and 3 processes), got %d:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if n, _ := strconv.Atoi(r[3]); n <= 0 {
			t.Errorf("row %q: no update done", r[0])
		}
		if a, _ := strconv.ParseFloat(r[5], 64); a < 1 {
			t.Errorf("row %q: %v attempts per update", r[0], a)
		}
		if r[2] == "1" && (r[6] != "1.00" || r[4] != "100") {
			t.Errorf("row %q: one process is its own mean and its own 100%%", r[0])
		}
		// Every update reads the key and writes it: two requests at least.
		if reqs, err := strconv.ParseFloat(r[10], 64); r[1] == "latchkey" && (err != nil || reqs < 2) {
			t.Errorf("row %q: req/upd %q, want the server's requests per update, 2 or more", r[0], r[10])
		}
		if r[1] != "latchkey" && r[10] != "-" {
			t.Errorf("row %q: req/upd %q for etcd, want -", r[0], r[10])
		}
	}
	for _, kind := range []string{"latchkey", "etcd", "etcd-stm"} {
		if !regexp.MustCompile(`updates per process, ` + kind + ` × 3: \d+ \d+ \d+`).MatchString(out) {
			t.Errorf("no per-process counts for %s × 3:\n%s", kind, out)
		}
	}
}

// Both HTTP clients drive the child server.
func TestBenchHTTPClients(t *testing.T) {
	for _, client := range []string{"lean", "net/http"} {
		c := benchCLI(t)
		out := c.ok("bench", "--http-client", client, "--duration", "200ms", "--clients", "2", "--keys", "distinct")
		if !strings.Contains(out, "the bench's "+client+" HTTP client") {
			t.Errorf("--http-client %s: output does not name the client:\n%s", client, out)
		}
		if rows := benchRows(out, "latchkey"); len(rows) != 1 || rows[0][3] == "0" {
			t.Errorf("--http-client %s: rows %q:\n%s", client, rows, out)
		}
	}
}
