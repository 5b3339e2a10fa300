package console

import (
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// Metrics is one sample of the counters /-/metrics exports, cumulative
// since the server started. The overview's charts poll it and plot the
// differences between two samples; the page without JavaScript shows the
// totals and the quantiles since start.
type Metrics struct {
	TimeMillis int64  `json:"time_ms"`
	Commits    uint64 `json:"commits"`
	Updates    uint64 `json:"updates"`
	// Fsync is latchkey_engine_commit_duration_seconds: one durable
	// commit, fsync included.
	Fsync Histogram `json:"fsync"`
	// Requests is latchkey_http_requests_total summed over status codes,
	// by API (consul, s3, ops).
	Requests map[string]uint64 `json:"requests"`
}

// Histogram is a cumulative Prometheus histogram.
type Histogram struct {
	Count  uint64    `json:"count"`
	Sum    float64   `json:"sum"`
	Bounds []float64 `json:"bounds"` // upper bounds, ascending (no +Inf)
	Counts []uint64  `json:"counts"` // cumulative count at each bound
}

// Quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: linear interpolation inside the bucket that holds it. NaN when
// empty.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	rank := q * float64(h.Count)
	i := sort.Search(len(h.Counts), func(i int) bool { return float64(h.Counts[i]) >= rank })
	if i == len(h.Counts) {
		if len(h.Bounds) == 0 {
			return math.NaN()
		}
		return h.Bounds[len(h.Bounds)-1] // in the +Inf bucket: the last finite bound
	}
	lo, below := 0.0, uint64(0)
	if i > 0 {
		lo, below = h.Bounds[i-1], h.Counts[i-1]
	}
	in := h.Counts[i] - below
	if in == 0 {
		return h.Bounds[i]
	}
	return lo + (h.Bounds[i]-lo)*(rank-float64(below))/float64(in)
}

func (h *Handler) metrics(nowMillis int64) (Metrics, bool) {
	m := Metrics{TimeMillis: nowMillis, Requests: map[string]uint64{}}
	if h.o.Metrics == nil {
		return m, false
	}
	fams, err := h.o.Metrics.Gather()
	if err != nil && len(fams) == 0 {
		return m, false
	}
	for _, f := range fams {
		switch f.GetName() {
		case "latchkey_engine_commits_total":
			m.Commits = uint64(counter(f))
		case "latchkey_engine_updates_total":
			m.Updates = uint64(counter(f))
		case "latchkey_engine_commit_duration_seconds":
			if ms := f.GetMetric(); len(ms) > 0 && ms[0].GetHistogram() != nil {
				hg := ms[0].GetHistogram()
				m.Fsync.Count, m.Fsync.Sum = hg.GetSampleCount(), hg.GetSampleSum()
				for _, b := range hg.GetBucket() {
					if math.IsInf(b.GetUpperBound(), 1) {
						continue
					}
					m.Fsync.Bounds = append(m.Fsync.Bounds, b.GetUpperBound())
					m.Fsync.Counts = append(m.Fsync.Counts, b.GetCumulativeCount())
				}
			}
		case "latchkey_http_requests_total":
			for _, mm := range f.GetMetric() {
				for _, l := range mm.GetLabel() {
					if l.GetName() == "api" {
						m.Requests[l.GetValue()] += uint64(mm.GetCounter().GetValue())
					}
				}
			}
		}
	}
	return m, true
}

func counter(f *dto.MetricFamily) float64 {
	var s float64
	for _, m := range f.GetMetric() {
		if c := m.GetCounter(); c != nil {
			s += c.GetValue()
		} else if g := m.GetGauge(); g != nil {
			s += g.GetValue()
		}
	}
	return s
}
