package consulapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/enginetest"
)

const fuzzToken = "fuzz-token"

// fuzzHandler is one handler over one engine, shared by a fuzz target's
// inputs, with an ACL token and a logger whose output the targets check:
// writeError logs exactly the failures that are not Consul's own answers.
type fuzzHandler struct {
	e   *engine.Engine
	h   *Handler
	mu  sync.Mutex
	log bytes.Buffer
}

func newFuzzHandler(f *testing.F) *fuzzHandler {
	e := enginetest.Open(f)
	fh := &fuzzHandler{e: e}
	logger := slog.New(slog.NewTextHandler(lockedWriter{fh}, &slog.HandlerOptions{Level: slog.LevelError}))
	h, err := New(e, &Options{NodeName: "node-fuzz", ACLToken: fuzzToken, Logger: logger,
		MinSessionTTL: time.Second, MaxQueryTime: time.Second, DefaultQueryTime: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	fh.h = h
	f.Cleanup(func() { h.Close() }) // before enginetest closes e
	for _, k := range []string{"a", "a/b", "locked"} {
		w := fh.serve(httptest.NewRequest("PUT", "/v1/kv/"+k+"?token="+fuzzToken, strings.NewReader("v")))
		if w.Code != 200 {
			f.Fatalf("seed %s: %d %s", k, w.Code, w.Body)
		}
	}
	return fh
}

type lockedWriter struct{ fh *fuzzHandler }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.fh.mu.Lock()
	defer l.fh.mu.Unlock()
	return l.fh.log.Write(p)
}

// serve runs r with a short deadline: a blocking query ends when it does
// (an answer that never comes is a hang, which the fuzzer reports).
func (fh *fuzzHandler) serve(r *http.Request) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(r.Context(), 50*time.Millisecond)
	defer cancel()
	w := httptest.NewRecorder()
	fh.h.ServeHTTP(w, r.WithContext(ctx))
	return w
}

// check sends r and enforces the invariants: no panic; no internal
// failure (a non-Consul error, which writeError logs); a 500 only as one of
// Consul's own plain-text answers to bad input (Consul answers 500 to a bad
// dc, flags or session, and latchkey mirrors it); every refusal is a
// plain-text body (or, for a rolled-back /v1/txn, its 409 JSON "Errors"
// list) and writes nothing (the engine's index is unchanged).
func (fh *fuzzHandler) check(t *testing.T, r *http.Request) {
	t.Helper()
	index := fh.e.Index()
	w := fh.serve(r)
	fh.mu.Lock()
	logged := fh.log.String()
	fh.log.Reset()
	fh.mu.Unlock()
	if logged != "" {
		t.Fatalf("%s %s: internal failure %d %q: %s", r.Method, r.URL, w.Code, w.Body, logged)
	}
	if w.Code < 400 {
		return
	}
	ct := w.Header().Get("Content-Type")
	txnErrors := w.Code == http.StatusConflict && strings.HasPrefix(ct, "application/json") && strings.Contains(w.Body.String(), `"Errors"`)
	if w.Body.Len() > 0 && !strings.HasPrefix(ct, "text/plain") && !txnErrors {
		t.Fatalf("%s %s: %d with Content-Type %q", r.Method, r.URL, w.Code, ct)
	}
	if fh.e.Index() != index {
		t.Fatalf("%s %s: refused with %d %q, yet wrote (index %d→%d)", r.Method, r.URL, w.Code, w.Body, index, fh.e.Index())
	}
}

// fuzzConsulRequest builds a request; auth 0 carries the token as
// X-Consul-Token, 1 as a bearer token, 2 carries none and 3 a wrong one
// (both must be refused with 403 and write nothing).
func fuzzConsulRequest(method, path, rawQuery, body string, auth uint8) *http.Request {
	u, err := url.Parse("http://consul.test" + path)
	if err != nil {
		return nil
	}
	u.RawQuery = rawQuery
	r := httptest.NewRequest(method, "http://consul.test/", strings.NewReader(body))
	r.URL, r.RequestURI = u, u.RequestURI()
	switch auth % 4 {
	case 0:
		r.Header.Set("X-Consul-Token", fuzzToken)
	case 1:
		r.Header.Set("Authorization", "Bearer "+fuzzToken)
	case 3:
		r.Header.Set("X-Consul-Token", "not-"+fuzzToken)
	}
	return r
}

// FuzzQueryParams: arbitrary methods, /v1/ paths and query strings (dc,
// stale/consistent, index/wait, recurse/keys/separator, cas/flags/acquire/
// release, session bodies, token).
func FuzzQueryParams(f *testing.F) {
	f.Add(uint8(0), "/v1/kv/a", "recurse&index=1&wait=10ms", "", uint8(0))
	f.Add(uint8(0), "/v1/kv/", "keys&separator=/&stale", "", uint8(1))
	f.Add(uint8(0), "/v1/kv/a", "stale&consistent", "", uint8(0))
	f.Add(uint8(1), "/v1/kv/a", "cas=abc&flags=-1", "x", uint8(0))
	f.Add(uint8(1), "/v1/kv/a", "cas=0", "x", uint8(2))
	f.Add(uint8(1), "/v1/kv/locked", "acquire=00000000-0000-0000-0000-000000000000", "x", uint8(0))
	f.Add(uint8(2), "/v1/kv/a", "recurse&cas=1", "", uint8(3))
	f.Add(uint8(1), "/v1/session/create", "dc=dc2", `{"TTL":"10s","Behavior":"delete","LockDelay":"1h"}`, uint8(0))
	f.Add(uint8(1), "/v1/session/renew/zzz", "", "", uint8(0))
	f.Add(uint8(0), "/v1/session/list", "index=18446744073709551615&wait=1ms", "", uint8(0))
	f.Add(uint8(0), "/v1/agent/self", "token="+fuzzToken, "", uint8(2))
	f.Add(uint8(0), "/v1/status/leader", "max_stale=x", "", uint8(0))
	h := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, m uint8, path, rawQuery, body string, auth uint8) {
		method := []string{"GET", "PUT", "DELETE", "POST", "OPTIONS", "HEAD"}[int(m)%6]
		if !strings.HasPrefix(path, "/v1/") || len(body) > 1<<16 {
			return
		}
		if r := fuzzConsulRequest(method, path, rawQuery, body, auth); r != nil {
			h.check(t, r)
		}
	})
}

// FuzzTxnBody: arbitrary /v1/txn bodies and queries.
func FuzzTxnBody(f *testing.F) {
	f.Add(`[{"KV":{"Verb":"set","Key":"t","Value":"dg=="}},{"KV":{"Verb":"cas","Key":"t","Index":1}}]`, "", uint8(0))
	f.Add(`[{"KV":{"Verb":"get","Key":"a"}},{"KV":{"Verb":"get-tree","Key":""}}]`, "stale", uint8(0))
	f.Add(`[{"KV":{"Verb":"lock","Key":"locked","Session":"x"}},{"KV":{"Verb":"delete-cas","Key":"a","Index":18446744073709551615}}]`, "", uint8(1))
	f.Add(`[{"KV":{"Verb":"check-not-exists","Key":"a"}},{"Node":{"Verb":"get"}}]`, "dc=other", uint8(0))
	f.Add(`[{"KV":{"Verb":"delete-tree","Key":""}}]`, "", uint8(2))
	f.Add(`[{"KV":{"Verb":"set","Key":"k","Value":"not base64!"}}]`, "", uint8(0))
	f.Add(`{"KV":null}`, "", uint8(0))
	h := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, body, rawQuery string, auth uint8) {
		if len(body) > 1<<16 {
			return
		}
		if r := fuzzConsulRequest("PUT", "/v1/txn", rawQuery, body, auth); r != nil {
			h.check(t, r)
		}
	})
}
