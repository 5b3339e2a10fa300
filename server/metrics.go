package server

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/latchkey/latchkey/server/internal/consulapi"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/hdrval"
)

// metrics are the server's Prometheus metrics, in a registry of its own (no
// global state, so several servers can run in one test process).
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	batchSize prometheus.Histogram
	commitDur prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_http_requests_total",
			Help: "HTTP requests served, by API (consul, s3, ops) and status code.",
		}, []string{"api", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "latchkey_http_request_duration_seconds",
			Help:    "HTTP request latency by API (blocking queries included).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 11), // 100µs … ~100s
		}, []string{"api"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "latchkey_engine_commit_batch_size",
			Help:    "Updates carried by one durable commit (group commit: one fsync round each).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 … 1024
		}),
		commitDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "latchkey_engine_commit_duration_seconds",
			Help:    "Duration of one durable commit, fsync included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.batchSize, m.commitDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// onCommit is the engine's Options.OnCommit.
func (m *metrics) onCommit(updates int, d time.Duration) {
	m.batchSize.Observe(float64(updates))
	m.commitDur.Observe(d.Seconds())
}

// engine registers the gauges and counters read from an open engine.
func (m *metrics) engine(e *engine.Engine) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "latchkey_engine_commits_total",
			Help: "Durable commits (fsync rounds) since start.",
		}, func() float64 { return float64(e.Stats().Commits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "latchkey_engine_updates_total",
			Help: "Engine updates applied since start; updates/commits is the mean group commit size.",
		}, func() float64 { return float64(e.Stats().Updates) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "latchkey_engine_index",
			Help: "Latest committed global index (Consul's X-Consul-Index).",
		}, func() float64 { return float64(e.Index()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "latchkey_engine_failed",
			Help: "1 once a durable commit has failed (I/O error, full disk): the engine refuses reads and writes until the server restarts.",
		}, func() float64 {
			if e.Err() != nil {
				return 1
			}
			return 0
		}),
	)
}

// consul registers the Consul API's in-memory state as gauges.
func (m *metrics) consul(stats func() consulapi.Stats) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "latchkey_consul_session_timers",
			Help: "Consul sessions with an armed TTL timer.",
		}, func() float64 { return float64(stats().SessionTimers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "latchkey_consul_lock_delays",
			Help: "Keys under an active Consul lock-delay.",
		}, func() float64 { return float64(stats().LockDelays) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "latchkey_consul_blocking_queries",
			Help: "Consul blocking queries waiting now.",
		}, func() float64 { return float64(stats().BlockingQueries) }),
	)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// instrument counts and times every request of one API, and logs it: at
// info level with logRequests, else at debug level, and at warn level on a
// 5xx. Only the path is logged, never the query (it may carry ?token= or a
// presigned signature). The request id is the S3 API's x-amz-request-id,
// else one made here and sent as X-Request-Id.
func (m *metrics) instrument(api string, h http.Handler, log *slog.Logger, logRequests bool) http.Handler {
	series := m.bind(api)
	base := slog.LevelDebug
	if logRequests {
		base = slog.LevelInfo
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		id := ""
		if api != "s3" {
			v := requestIDs.Hex64(rand.Uint64())
			w.Header()["X-Request-Id"] = v // canonical already
			id = v[0]
		}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		d := time.Since(start)
		series.latency.Observe(d.Seconds())
		series.requests(sw.status).Inc()
		level := base
		if sw.status >= 500 {
			level = slog.LevelWarn
		}
		if log.Enabled(r.Context(), level) {
			if id == "" {
				id = w.Header().Get("x-amz-request-id")
			}
			log.LogAttrs(r.Context(), level, "request", slog.String("api", api),
				slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
				slog.Int("status", sw.status), slog.Duration("duration", d),
				slog.String("request_id", id), slog.String("remote", r.RemoteAddr))
		}
	})
}

// apiSeries are one API's series, bound once: no label lookup per request.
type apiSeries struct {
	api     string
	latency prometheus.Observer
	vec     *prometheus.CounterVec
	// codes[c] is the request counter of status c, bound when c is first
	// answered, so that /-/metrics lists the codes served, as before.
	codes [600]atomic.Pointer[prometheus.Counter]
}

func (m *metrics) bind(api string) *apiSeries {
	return &apiSeries{api: api, latency: m.latency.WithLabelValues(api), vec: m.requests}
}

// requests is the counter of requests answered with status code.
func (s *apiSeries) requests(code int) prometheus.Counter {
	if code < 0 || code >= len(s.codes) {
		return s.vec.WithLabelValues(s.api, strconv.Itoa(code))
	}
	if c := s.codes[code].Load(); c != nil {
		return *c
	}
	c := s.vec.WithLabelValues(s.api, strconv.Itoa(code))
	s.codes[code].Store(&c) // a racing store binds the same series
	return c
}

// requestIDs hold the X-Request-Id values: 16 random hex digits, a
// request's name in logs, not a secret, so math/rand/v2's generator
// (seeded by the runtime) serves without a system call per request, and
// the value shares its allocation with the next few dozen (hdrval).
var requestIDs hdrval.Slabs

// statusWriter records the status code. Unwrap lets http.ResponseController
// reach the connection's Flush, deadlines and hijacking.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
