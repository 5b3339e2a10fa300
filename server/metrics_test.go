package server

import (
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The request counters are bound once per API and status code, and a
// code's series exists only once a request was answered with it, as with
// a label lookup per request.
func TestRequestCountersPerCode(t *testing.T) {
	m := newMetrics()
	codes := []int{200, 200, 404, 200, 999, 999}
	i := 0
	h := m.instrument("consul", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(codes[i])
	}), slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	for i = range codes {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/kv/k", nil))
	}
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "latchkey_http_requests_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "code" {
					got[l.GetValue()] = s.GetCounter().GetValue()
				}
			}
		}
	}
	if want := map[string]float64{"200": 3, "404": 1, "999": 2}; !maps.Equal(got, want) {
		t.Errorf("requests by code %v, want %v (a series for each code answered, no other)", got, want)
	}
}
