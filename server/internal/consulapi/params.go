package consulapi

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// queryOptions are the common query parameters of reads.
type queryOptions struct {
	index       uint64        // blocking index; 0 = do not block
	wait        time.Duration // blocking timeout including jitter
	consistency string        // "leader", "stale" or "consistent"
}

// has reports whether a query parameter is present, whatever its value:
// Consul treats ?recurse=false as ?recurse.
func has(q url.Values, name string) bool {
	_, ok := q[name]
	return ok
}

// parseDC rejects a datacenter other than ours with Consul's 500.
func (h *Handler) parseDC(q url.Values) error {
	if dc := q.Get("dc"); dc != "" && dc != h.opts.Datacenter {
		return serverError("No path to datacenter")
	}
	return nil
}

// parseQuery reads dc, stale/consistent, max_stale, index and wait.
func (h *Handler) parseQuery(q url.Values) (queryOptions, error) {
	var qo queryOptions
	if err := h.parseDC(q); err != nil {
		return qo, err
	}
	stale, consistent := has(q, "stale"), has(q, "consistent")
	switch {
	case stale && consistent:
		return qo, badRequest("Cannot specify ?stale with ?consistent, conflicting semantics.")
	case stale:
		qo.consistency = "stale"
	case consistent:
		qo.consistency = "consistent"
	default:
		qo.consistency = "leader"
	}
	// Consul skips empty values (?wait=&index= is a plain read) and
	// parses wait before index (parseWait), so a request with both bad
	// says "Invalid wait time".
	if v := q.Get("max_stale"); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return qo, badRequest("Invalid max_stale value " + strconv.Quote(v))
		}
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return qo, badRequest("Invalid wait time")
		}
		wait = d
	}
	if v := q.Get("index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return qo, badRequest("Invalid index")
		}
		qo.index = idx
	}
	qo.wait = h.blockingTimeout(wait)
	return qo, nil
}

// blockingTimeout applies Consul's rules: a wait above the maximum query
// time is capped, none (or ≤ 0) means the default query time, and jitter
// in [0, timeout/16) is added.
func (h *Handler) blockingTimeout(wait time.Duration) time.Duration {
	switch {
	case wait > h.opts.MaxQueryTime:
		wait = h.opts.MaxQueryTime
	case wait <= 0:
		wait = h.opts.DefaultQueryTime
	}
	if j := int64(wait / 16); j > 0 {
		wait += time.Duration(rand.Int64N(j))
	}
	return wait
}

// query is r's query, parsed once per request (the one place that
// parses it): as r.URL.Query(), malformed pairs dropped, and nil (which
// reads as empty) when there is none, so that a request without a query
// allocates nothing here.
func query(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	return r.URL.Query()
}
