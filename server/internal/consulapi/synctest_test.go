package consulapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// call serves one request in-process (no network, so it runs inside a
// synctest bubble).
func call(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// inBubble runs f with a handler over a fresh engine inside a synctest
// bubble: time is fake, so Consul's real defaults (TTL ≥ 10s, lock-delay
// 15s) are tested without waiting for them.
func inBubble(t *testing.T, f func(t *testing.T, h *Handler)) {
	synctest.Test(t, func(t *testing.T) {
		e := enginetest.Open(t)
		h, err := New(e, &Options{NodeName: "n", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		f(t, h)
	})
}

func createSession(t *testing.T, h *Handler, body string) string {
	t.Helper()
	code, out := call(t, h, "PUT", "/v1/session/create", body)
	var created struct{ ID string }
	if code != 200 || json.Unmarshal([]byte(out), &created) != nil {
		t.Fatalf("create %s: %d %s", body, code, out)
	}
	return created.ID
}

func holder(t *testing.T, h *Handler, key string) string {
	t.Helper()
	code, out := call(t, h, "GET", "/v1/kv/"+key, "")
	var es []dirEntry
	if code != 200 || json.Unmarshal([]byte(out), &es) != nil || len(es) != 1 {
		t.Fatalf("get %s: %d %s", key, code, out)
	}
	return es[0].Session
}

// With Consul's defaults: a 10s-TTL session holds its key for at least
// 10s without renewals and loses it by 20s; renewals every 5s keep it
// alive indefinitely.
func TestSyncTTLDefaults(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		lapsed := createSession(t, h, `{"TTL":"10s","LockDelay":"0s"}`)
		renewed := createSession(t, h, `{"TTL":"10s","LockDelay":"0s"}`)
		for key, id := range map[string]string{"a": lapsed, "b": renewed} {
			if code, out := call(t, h, "PUT", "/v1/kv/"+key+"?acquire="+id, "x"); code != 200 || out != "true" {
				t.Fatalf("acquire %s: %d %s", key, code, out)
			}
		}
		for elapsed := 5 * time.Second; elapsed <= 60*time.Second; elapsed += 5 * time.Second {
			time.Sleep(5 * time.Second)
			synctest.Wait()
			if code, _ := call(t, h, "PUT", "/v1/session/renew/"+renewed, ""); code != 200 {
				t.Fatalf("renew at %v: %d", elapsed, code)
			}
			got := holder(t, h, "a")
			switch {
			case elapsed < 10*time.Second && got != lapsed:
				t.Fatalf("released at %v, before the TTL", elapsed)
			case elapsed >= 20*time.Second && got != "":
				t.Fatalf("still held at %v, past 2×TTL", elapsed)
			}
			if holder(t, h, "b") != renewed {
				t.Fatalf("renewed session lost its key at %v", elapsed)
			}
		}
	})
}

// The default lock-delay is 15s; a LockDelay above 60s is capped at 60s.
func TestSyncLockDelayDefaults(t *testing.T) {
	for _, c := range []struct {
		body  string
		delay time.Duration
	}{
		{``, 15 * time.Second},
		{`{"LockDelay":"90s"}`, 60 * time.Second},
	} {
		inBubble(t, func(t *testing.T, h *Handler) {
			s1, s2 := createSession(t, h, c.body), createSession(t, h, "")
			call(t, h, "PUT", "/v1/kv/k?acquire="+s1, "")
			call(t, h, "PUT", "/v1/session/destroy/"+s1, "")
			time.Sleep(c.delay - time.Second)
			if _, out := call(t, h, "PUT", "/v1/kv/k?acquire="+s2, ""); out != "false" {
				t.Fatalf("%q: acquire 1s before the end of the lock-delay: %s", c.body, out)
			}
			time.Sleep(time.Second)
			if _, out := call(t, h, "PUT", "/v1/kv/k?acquire="+s2, ""); out != "true" {
				t.Fatalf("%q: acquire at the end of the lock-delay: %s", c.body, out)
			}
		})
	}
}

// Blocking-query timeouts: no wait → 5m, a wait above 10m → 10m,
// plus jitter below wait/16; on timeout the answer is the current state
// with the same index. A write ends the wait at once.
func TestSyncBlockingTimeouts(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		call(t, h, "PUT", "/v1/kv/k", "v")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/kv/k", nil))
		idx := rec.Header().Get("X-Consul-Index")
		for _, c := range []struct {
			wait     string
			min, max time.Duration
		}{
			{"", 5 * time.Minute, 5*time.Minute + 5*time.Minute/16},
			{"&wait=20m", 10 * time.Minute, 10*time.Minute + 10*time.Minute/16},
			{"&wait=1s", time.Second, time.Second + time.Second/16},
			{"&wait=0s", 5 * time.Minute, 5*time.Minute + 5*time.Minute/16},
		} {
			start := time.Now()
			code, _ := call(t, h, "GET", "/v1/kv/k?index="+idx+c.wait, "")
			el := time.Since(start)
			if code != 200 || el < c.min || el >= c.max {
				t.Errorf("wait %q: %d after %v, want 200 within [%v, %v)", c.wait, code, el, c.min, c.max)
			}
		}
		// A write wakes the waiter without any time passing.
		done := make(chan string, 1)
		start := time.Now()
		go func() {
			_, body := call(t, h, "GET", "/v1/kv/k?index="+idx, "")
			done <- body
		}()
		synctest.Wait() // the waiter is blocked
		call(t, h, "PUT", "/v1/kv/k", "w")
		if body := <-done; !strings.Contains(body, `"Value":"dw=="`) || time.Since(start) != 0 {
			t.Fatalf("woken after %v with %s", time.Since(start), body)
		}
	})
}

func TestSyncStats(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		id := createSession(t, h, `{"TTL":"10s","LockDelay":"5s"}`)
		createSession(t, h, "") // no TTL: no timer
		call(t, h, "PUT", "/v1/kv/k?acquire="+id, "")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/kv/k", nil))
		go call(t, h, "GET", "/v1/kv/k?wait=1m&index="+rec.Header().Get("X-Consul-Index"), "")
		synctest.Wait()
		if st := h.Stats(); st != (Stats{SessionTimers: 1, LockDelays: 0, BlockingQueries: 1}) {
			t.Fatalf("before expiry: %+v", st)
		}
		time.Sleep(20 * time.Second) // the TTL session expires, releasing k (which wakes the query)
		synctest.Wait()
		if st := h.Stats(); st != (Stats{SessionTimers: 0, LockDelays: 1, BlockingQueries: 0}) {
			t.Fatalf("after expiry: %+v", st)
		}
	})
}

// A TTL invalidation whose commit fails is retried (the session must not
// become immortal): here the first two attempts fail, so the key is
// released one retry pause after each, not at 2×TTL.
func TestSyncTTLExpiryRetriedAfterFailure(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		fails := 2
		h.m.FailExpiries(func(string) error {
			if fails > 0 {
				fails--
				return errors.New("injected commit failure")
			}
			return nil
		})
		id := createSession(t, h, `{"TTL":"10s","LockDelay":"0s"}`)
		call(t, h, "PUT", "/v1/kv/k?acquire="+id, "x")
		time.Sleep(20*time.Second + time.Millisecond) // 2×TTL: first attempt, fails
		synctest.Wait()
		if holder(t, h, "k") != id || h.Stats().SessionTimers != 1 {
			t.Fatalf("after a failed expiry: holder %q, stats %+v; want still held with a retry armed", holder(t, h, "k"), h.Stats())
		}
		time.Sleep(consulmodel.ExpiryRetry) // second attempt, fails
		synctest.Wait()
		if holder(t, h, "k") != id {
			t.Fatal("released by a failed attempt")
		}
		time.Sleep(consulmodel.ExpiryRetry) // third attempt succeeds
		synctest.Wait()
		if got := holder(t, h, "k"); got != "" || h.Stats().SessionTimers != 0 {
			t.Fatalf("after the retry: holder %q, stats %+v", got, h.Stats())
		}
	})
}

// TTL bounds at Consul's defaults: "" and "0" mean no TTL; otherwise
// [10s, 24h], with Consul's 500 text printing the TTL in nanoseconds.
func TestSyncSessionTTLBounds(t *testing.T) {
	inBubble(t, func(t *testing.T, h *Handler) {
		for _, c := range []struct {
			ttl  string
			code int
			body string
		}{
			{`""`, 200, ""},
			{`"0"`, 200, ""},
			{`"0s"`, 200, ""},
			{`"10s"`, 200, ""},
			{`"24h"`, 200, ""},
			{`"9s"`, 500, "Invalid Session TTL '9000000000', must be between [10s=24h0m0s]"},
			{`"24h0m1s"`, 500, "Invalid Session TTL '86401000000000', must be between [10s=24h0m0s]"},
			{`"-10s"`, 500, "Invalid Session TTL '-10000000000', must be between [10s=24h0m0s]"},
			{`"10"`, 500, `Session TTL '10' invalid: time: missing unit in duration "10"`},
		} {
			code, body := call(t, h, "PUT", "/v1/session/create", `{"TTL":`+c.ttl+`}`)
			if code != c.code || (c.code != 200 && body != c.body) {
				t.Errorf("TTL %s: %d %q, want %d %q", c.ttl, code, body, c.code, c.body)
			}
		}
		// Only the 10s and 24h sessions have timers.
		if st := h.Stats(); st.SessionTimers != 2 {
			t.Errorf("%d armed timers, want 2 (no timer for an empty or zero TTL)", st.SessionTimers)
		}
	})
}
