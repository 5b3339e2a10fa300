package console

import (
	"math"
	"testing"
)

func TestHistogramQuantile(t *testing.T) {
	h := Histogram{Bounds: []float64{1, 2, 4, 8}, Counts: []uint64{10, 10, 90, 100}, Count: 100}
	for _, c := range []struct{ q, want float64 }{
		{0.05, 0.5}, // halfway through the first bucket, from 0
		{0.10, 1},   // its top
		{0.50, 2 + 2*(50.0-10)/80},
		{0.99, 4 + 4*(99.0-90)/10},
		{1, 8},
	} {
		if got := h.Quantile(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%.2f = %v, want %v", c.q, got, c.want)
		}
	}
	// Samples above the last bound (+Inf bucket): the last finite bound.
	over := Histogram{Bounds: []float64{1}, Counts: []uint64{1}, Count: 4}
	if got := over.Quantile(0.99); got != 1 {
		t.Errorf("q0.99 in +Inf = %v, want 1", got)
	}
	if got := (Histogram{}).Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty = %v, want NaN", got)
	}
}
