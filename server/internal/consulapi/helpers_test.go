package consulapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/enginetest"
)

type testServer struct {
	*httptest.Server
	h      *Handler
	e      *engine.Engine
	client *api.Client
}

// newTestServer starts the handler over a fresh engine (no fsync) on
// 127.0.0.1:0 and returns it with an official client pointed at it. When
// opts is nil, the session TTL minimum is lowered to 100ms so that TTL
// tests run in well under a second.
func newTestServer(t testing.TB, opts *Options) *testServer {
	t.Helper()
	e := enginetest.Open(t)
	if opts == nil {
		opts = &Options{MinSessionTTL: 100 * time.Millisecond}
	}
	if opts.NodeName == "" {
		opts.NodeName = "node-test"
	}
	h, err := New(e, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() }) // before enginetest closes e
	srv := testutil.Serve(t, h)     // cancels blocking queries before h.Close
	cfg := api.DefaultConfig()
	cfg.Address = srv.Listener.Addr().String()
	cfg.Token = opts.ACLToken
	client, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{Server: srv, h: h, e: e, client: client}
}

// do sends a raw request and returns the response with its body read.
func (s *testServer) do(t testing.TB, method, path string, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func (s *testServer) expect(t testing.TB, method, path, body string, wantStatus int, wantBody string) *http.Response {
	t.Helper()
	resp, got := s.do(t, method, path, body)
	if resp.StatusCode != wantStatus || got != wantBody {
		t.Fatalf("%s %s: got %d %q, want %d %q", method, path, resp.StatusCode, got, wantStatus, wantBody)
	}
	return resp
}

func mustPut(t testing.TB, kv *api.KV, key, value string) {
	t.Helper()
	if _, err := kv.Put(&api.KVPair{Key: key, Value: []byte(value)}, nil); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t testing.TB, kv *api.KV, key string) *api.KVPair {
	t.Helper()
	p, _, err := kv.Get(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
