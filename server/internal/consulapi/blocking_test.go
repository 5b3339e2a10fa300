package consulapi

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// get serves one GET in the bubble and returns status, X-Consul-Index,
// body and how long it took.
func get(t *testing.T, h *Handler, path string) (int, uint64, string, time.Duration) {
	t.Helper()
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	idx, err := strconv.ParseUint(rec.Header().Get("X-Consul-Index"), 10, 64)
	if err != nil || idx == 0 {
		t.Fatalf("GET %s: X-Consul-Index %q", path, rec.Header().Get("X-Consul-Index"))
	}
	return rec.Code, idx, rec.Body.String(), time.Since(start)
}

// On timeout a blocking query answers the current state with the current
// index, which may equal the requested one or be below it (an index from
// the future blocks until the timeout).
func TestSyncBlockingTimeoutAnswersCurrentState(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		call(t, h, "PUT", "/v1/kv/k", "v")
		_, idx, body0, _ := get(t, h, "/v1/kv/k")
		for _, c := range []struct {
			name  string
			index uint64
			path  string
			code  int
			body  string
		}{
			{"same index", idx, "/v1/kv/k", 200, body0},
			{"future index", idx + 1000, "/v1/kv/k", 200, body0},
			{"missing key", idx, "/v1/kv/missing", 404, ""},
			{"recurse", idx, "/v1/kv/?recurse", 200, body0},
			{"keys", idx, "/v1/kv/?keys", 200, `["k"]`},
		} {
			sep := "?"
			if strings.Contains(c.path, "?") {
				sep = "&"
			}
			code, got, body, el := get(t, h, c.path+sep+"wait=2s&index="+strconv.FormatUint(c.index, 10))
			if code != c.code || body != c.body || got != idx {
				t.Errorf("%s: %d index %d %q, want %d index %d %q", c.name, code, got, body, c.code, idx, c.body)
			}
			if el < 2*time.Second || el >= 2*time.Second+2*time.Second/16 {
				t.Errorf("%s: answered after %v, want the 2s wait plus jitter below 125ms", c.name, el)
			}
		}
	})
}

// A single-key query wakes only for its own key: writes to a
// sibling that shares its name as a prefix, and to other keys, leave it
// waiting. A list query wakes for writes and deletes under its prefix
// (tombstones count) and not for writes elsewhere; its index then moves
// past the requested one.
func TestSyncBlockingWakeScope(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		call(t, h, "PUT", "/v1/kv/p/a", "1")
		call(t, h, "PUT", "/v1/kv/p/b", "2")
		_, kIdx, _, _ := get(t, h, "/v1/kv/p/a")
		_, lIdx, _, _ := get(t, h, "/v1/kv/p/?recurse")

		type answer struct {
			idx  uint64
			body string
			at   time.Duration
		}
		start := time.Now()
		wait := func(path string) chan answer {
			ch := make(chan answer, 1)
			go func() {
				_, idx, body, _ := get(t, h, path)
				ch <- answer{idx, body, time.Since(start)}
			}()
			return ch
		}
		key := wait("/v1/kv/p/a?wait=1m&index=" + strconv.FormatUint(kIdx, 10))
		list := wait("/v1/kv/p/?keys&wait=1m&index=" + strconv.FormatUint(lIdx, 10))
		synctest.Wait()

		time.Sleep(time.Second)
		call(t, h, "PUT", "/v1/kv/p/a2", "sibling") // under the list's prefix, not the key
		call(t, h, "PUT", "/v1/kv/q/x", "elsewhere")
		synctest.Wait()
		select {
		case a := <-key:
			t.Fatalf("single-key query woken by a sibling: %+v", a)
		default:
		}
		a := <-list
		if a.at != time.Second || a.idx <= lIdx || a.body != `["p/a","p/a2","p/b"]` {
			t.Fatalf("list query: %+v, want woken at 1s by p/a2 with an index past %d", a, lIdx)
		}

		// A delete under the prefix wakes a list query too.
		list = wait("/v1/kv/p/?keys&wait=1m&index=" + strconv.FormatUint(a.idx, 10))
		synctest.Wait()
		time.Sleep(time.Second)
		call(t, h, "PUT", "/v1/kv/q/y", "elsewhere") // does not wake it
		synctest.Wait()
		select {
		case b := <-list:
			t.Fatalf("list query woken by a write outside its prefix: %+v", b)
		default:
		}
		call(t, h, "DELETE", "/v1/kv/p/b", "")
		b := <-list
		if b.idx <= a.idx || b.body != `["p/a","p/a2"]` || b.at != 2*time.Second {
			t.Fatalf("list query after a delete: %+v (previous index %d)", b, a.idx)
		}

		// The key's own write wakes it at once.
		time.Sleep(time.Second)
		call(t, h, "PUT", "/v1/kv/p/a", "new")
		k := <-key
		if k.idx <= kIdx || k.at != 3*time.Second || k.body[0] != '[' {
			t.Fatalf("single-key query after its write: %+v", k)
		}
	})
}

// The jitter is really there: concurrent queries with the same wait do
// not all answer at the same instant, and none before the wait or at or
// after wait×17/16.
func TestSyncBlockingJitter(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		call(t, h, "PUT", "/v1/kv/k", "v")
		_, idx, _, _ := get(t, h, "/v1/kv/k")
		const n, wait = 8, 16 * time.Second
		took := make(chan time.Duration, n)
		for range n {
			go func() {
				_, _, _, el := get(t, h, "/v1/kv/k?wait=16s&index="+strconv.FormatUint(idx, 10))
				took <- el
			}()
		}
		distinct := map[time.Duration]bool{}
		for range n {
			el := <-took
			if el < wait || el >= wait+wait/16 {
				t.Errorf("answered after %v, want [16s, 17s)", el)
			}
			distinct[el] = true
		}
		if len(distinct) < 2 {
			t.Errorf("%d queries all answered after the same time: no jitter", n)
		}
	})
}

// StopBlocking (the server's shutdown) answers a blocking query in flight
// at once with the current state, and any that arrives after it too, as
// on their own timeout; a plain read is unaffected.
func TestSyncStopBlockingAnswersAtOnce(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		call(t, h, "PUT", "/v1/kv/k", "v")
		_, idx, body0, _ := get(t, h, "/v1/kv/k")
		path := "/v1/kv/k?wait=10m&index=" + strconv.FormatUint(idx, 10)
		type answer struct {
			code int
			body string
			el   time.Duration
		}
		got := make(chan answer, 1)
		go func() { // no t.Fatal off the test goroutine: get is not used here
			start := time.Now()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			got <- answer{rec.Code, rec.Body.String(), time.Since(start)}
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case a := <-got:
			t.Fatalf("blocking query answered before StopBlocking: %+v", a)
		default:
		}
		h.StopBlocking()
		synctest.Wait()
		select {
		case a := <-got:
			if a.code != 200 || a.body != body0 || a.el != time.Minute {
				t.Errorf("in flight at StopBlocking: %d %q after %v, want 200 %q after 1m", a.code, a.body, a.el, body0)
			}
		default:
			t.Fatal("blocking query still waiting after StopBlocking")
		}
		if code, _, body, el := get(t, h, path); code != 200 || body != body0 || el != 0 {
			t.Errorf("after StopBlocking: %d %q after %v, want 200 %q at once", code, body, el, body0)
		}
	})
}
