package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// metricsText is a latchkey server's /-/metrics as promhttp writes it
// (trimmed), with requests counts for the three APIs.
func metricsText(consul200, consul409, s3, ops, commits, updates int) string {
	return fmt.Sprintf(`# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 17
# HELP latchkey_engine_commit_duration_seconds Duration of one durable commit, fsync included.
# TYPE latchkey_engine_commit_duration_seconds histogram
latchkey_engine_commit_duration_seconds_bucket{le="0.0001"} 0
latchkey_engine_commit_duration_seconds_bucket{le="+Inf"} 3
latchkey_engine_commit_duration_seconds_sum 0.012
latchkey_engine_commit_duration_seconds_count 3
# HELP latchkey_engine_commits_total Durable commits (fsync rounds) since start.
# TYPE latchkey_engine_commits_total counter
latchkey_engine_commits_total %d
# HELP latchkey_engine_updates_total Engine updates applied since start; updates/commits is the mean group commit size.
# TYPE latchkey_engine_updates_total counter
latchkey_engine_updates_total %d
# HELP latchkey_http_requests_total HTTP requests served, by API (consul, s3, ops) and status code.
# TYPE latchkey_http_requests_total counter
latchkey_http_requests_total{api="consul",code="200"} %d
latchkey_http_requests_total{api="consul",code="409"} %d
latchkey_http_requests_total{api="ops",code="200"} %d
latchkey_http_requests_total{api="s3",code="200"} %d
`, commits, updates, consul200, consul409, ops, s3)
}

// The requests per update are the difference of the request counter
// over every API but ops (the bench's own /-/metrics readings), divided
// by the updates; unknown where the figures are not a latchkey server's.
func TestServerCountersPerUpdate(t *testing.T) {
	before, ok := parseServerCounters(metricsText(100, 5, 7, 3, 40, 90))
	if !ok || before.requests != 112 || before.commits != 40 || before.updates != 90 {
		t.Fatalf("parsed %+v, %v; want 112 requests (ops left out), 40 commits, 90 updates", before, ok)
	}
	// 50 updates: 130 consul requests answered 200, 20 more refused with
	// 409, 0 to S3; 2 more readings of /-/metrics, which do not count.
	after, ok := parseServerCounters(metricsText(230, 25, 7, 5, 70, 140))
	if !ok {
		t.Fatal("the second reading did not parse")
	}
	if got, ok := after.perUpdate(before, 50); !ok || got != 3.0 {
		t.Errorf("perUpdate = %v, %v; want 3 (150 requests for 50 updates)", got, ok)
	}
	if got, ok := after.perCommit(before); !ok || got != 50.0/30 {
		t.Errorf("perCommit = %v, %v; want 50/30", got, ok)
	}
	if _, ok := after.perUpdate(before, 0); ok {
		t.Error("requests per update known with no update done")
	}
	if _, ok := before.perUpdate(after, 50); ok {
		t.Error("a request counter that went back (a restarted server) gave a figure")
	}
	if _, ok := before.perCommit(before); ok {
		t.Error("updates per commit known with no commit")
	}

	// A latchkey server that has answered no request yet exports no
	// request series: 0, not unknown.
	fresh := metricsText(0, 0, 0, 0, 0, 0)
	fresh = fresh[:strings.Index(fresh, "# HELP latchkey_http_requests_total")]
	if c, ok := parseServerCounters(fresh); !ok || c.requests != 0 {
		t.Errorf("a fresh server's metrics: %+v, %v; want 0 requests", c, ok)
	}
	for name, text := range map[string]string{
		"no engine counters (not latchkey)": "# TYPE latchkey_http_requests_total counter\nlatchkey_http_requests_total{api=\"consul\",code=\"200\"} 5\n",
		"not Prometheus text":               "<html>Consul</html>\n",
		"empty":                             "",
		"a gauge named like the counter":    "# TYPE latchkey_engine_commits_total gauge\nlatchkey_engine_commits_total 1\n# TYPE latchkey_engine_updates_total counter\nlatchkey_engine_updates_total 1\n",
	} {
		if c, ok := parseServerCounters(text); ok {
			t.Errorf("%s: read %+v, want not known", name, c)
		}
	}
}

// readServerCounters sends the token (/-/metrics needs it when the server
// has one) and knows nothing when the server refuses it or has no
// /-/metrics (a real Consul).
func TestReadServerCounters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/-/metrics" || r.Header.Get("X-Consul-Token") != "tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, metricsText(10, 0, 0, 1, 2, 3))
	}))
	defer srv.Close()
	ctx := context.Background()
	hc := benchHTTPClient(1)
	if c, ok := readServerCounters(ctx, hc, srv.URL, "tok"); !ok || c.requests != 10 {
		t.Errorf("with the token: %+v, %v; want 10 requests", c, ok)
	}
	if _, ok := readServerCounters(ctx, hc, srv.URL, "wrong"); ok {
		t.Error("a refused /-/metrics gave counters")
	}
	if _, ok := readServerCounters(ctx, hc, "http://127.0.0.1:1", "tok"); ok {
		t.Error("no server gave counters")
	}
}

// Without --duration, measurements of updateLongProcs processes or more
// last updateLongDuration; a --duration given is kept, even one equal to
// the default.
func TestUpdateDuration(t *testing.T) {
	def := benchConfig{dur: 5 * time.Second}
	given := benchConfig{dur: 5 * time.Second, durSet: true}
	for _, c := range []struct {
		cfg   benchConfig
		procs int
		want  time.Duration
	}{
		{def, 1, 5 * time.Second}, {def, 31, 5 * time.Second}, {def, 32, updateLongDuration}, {def, 64, updateLongDuration},
		{given, 64, 5 * time.Second}, {benchConfig{dur: 3 * time.Second, durSet: true}, 64, 3 * time.Second},
	} {
		if got := updateDuration(c.cfg, c.procs); got != c.want {
			t.Errorf("durSet %v, %d processes: %v, want %v", c.cfg.durSet, c.procs, got, c.want)
		}
	}
	for _, args := range [][]string{{"--update-procs", "64"}, {"--update-procs", "64", "--duration", "5s"}} {
		var cfg benchConfig
		fs := benchFlags(&cfg)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if got, want := flagGiven(fs, "duration"), len(args) > 2; got != want {
			t.Errorf("bench %q: --duration given: %v, want %v", args, got, want)
		}
	}
	var cfg benchConfig
	fs := benchFlags(&cfg)
	var out strings.Builder
	benchUsage(&out, fs)
	if want := fmt.Sprintf("Without --duration, counts of %d processes or more run %v", updateLongProcs, updateLongDuration); !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
		t.Errorf("bench --help does not say %q", want)
	}
}
