package bench

import (
	"context"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/latchkey/latchkey/server"
)

// serverCounters are the counters the bench reads from a latchkey
// server's /-/metrics (Prometheus text), cumulative since it started: two
// readings around a measurement give what the server did during it.
type serverCounters struct {
	// commits and updates are latchkey_engine_commits_total and
	// latchkey_engine_updates_total: durable commits (fsync rounds) and the
	// engine updates they carried.
	commits, updates float64
	// requests is latchkey_http_requests_total summed over every API but
	// "ops" (the /-/ endpoints, where the bench's own readings land) and
	// every status code: the requests the store clients sent.
	requests float64
}

// Metric names and the label the bench reads (server/metrics.go).
const (
	metricCommits  = "latchkey_engine_commits_total"
	metricUpdates  = "latchkey_engine_updates_total"
	metricRequests = "latchkey_http_requests_total"
	metricAPILabel = "api"
	metricOpsAPI   = "ops"
)

// readServerCounters reads the counters from the latchkey server at base
// (http://host:port). ok is false when they cannot be read: another kind
// of server (a real Consul has no /-/metrics), a token the server refuses
// (/-/metrics needs the ACL token when the server has one; a server the
// bench starts has none), or an answer that is not a latchkey server's
// metrics.
func readServerCounters(ctx context.Context, hc *http.Client, base, token string) (serverCounters, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+server.MetricsPath, nil)
	if err != nil {
		return serverCounters{}, false
	}
	if token != "" {
		req.Header.Set("X-Consul-Token", token)
	}
	code, body, _, err := do(hc, req)
	if err != nil || code != http.StatusOK {
		return serverCounters{}, false
	}
	return parseServerCounters(string(body))
}

// parseServerCounters reads the counters from a /-/metrics answer in the
// Prometheus text format. ok is false unless both engine counters are
// there (then it is a latchkey server's, and a request counter without
// series means no request counted yet: 0).
func parseServerCounters(text string) (c serverCounters, ok bool) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return c, false
	}
	commits, okC := counterSum(fams[metricCommits], nil)
	updates, okU := counterSum(fams[metricUpdates], nil)
	if !okC || !okU {
		return c, false
	}
	requests, _ := counterSum(fams[metricRequests], func(labels []*dto.LabelPair) bool {
		for _, l := range labels {
			if l.GetName() == metricAPILabel {
				return l.GetValue() != metricOpsAPI
			}
		}
		return true
	})
	return serverCounters{commits: commits, updates: updates, requests: requests}, true
}

// counterSum adds up the counter series of f that keep accepts (nil: all
// of them); ok is false when f is missing or not a counter.
func counterSum(f *dto.MetricFamily, keep func([]*dto.LabelPair) bool) (sum float64, ok bool) {
	if f == nil || f.GetType() != dto.MetricType_COUNTER {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if keep == nil || keep(m.GetLabel()) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, true
}

// perCommit is the engine updates per durable commit between the
// readings before and after; ok is false when there was no commit.
func (after serverCounters) perCommit(before serverCounters) (float64, bool) {
	if after.commits <= before.commits {
		return 0, false
	}
	return (after.updates - before.updates) / (after.commits - before.commits), true
}

// perUpdate is the server's requests per update between the readings
// before and after, for updates done in between; ok is false when there
// were none, or when the counter went back (the server restarted).
func (after serverCounters) perUpdate(before serverCounters, updates int) (float64, bool) {
	if updates <= 0 || after.requests < before.requests {
		return 0, false
	}
	return (after.requests - before.requests) / float64(updates), true
}
