package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func tag(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name+" "+r.URL.EscapedPath())
	})
}

func TestRoutingOnEscapedPath(t *testing.T) {
	rt := &router{consul: tag("consul"), s3: tag("s3"), ops: tag("ops")}
	ts := httptest.NewServer(rt)
	defer ts.Close()
	for path, want := range map[string]string{
		"/v1/kv/a":            "consul /v1/kv/a",
		"/v1/kv//a/../b":      "consul /v1/kv//a/../b",
		"/v1":                 "consul /v1",
		"/v10/x":              "s3 /v10/x",
		"/bucket/a//b/../c":   "s3 /bucket/a//b/../c",
		"/bucket/a%2Fb":       "s3 /bucket/a%2Fb",
		"/":                   "s3 /",
		"/-/health":           "ops /-/health",
		"/bucket/-/health":    "s3 /bucket/-/health",
		"/bucket/key%20space": "s3 /bucket/key%20space",
	} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		resp, err := http.DefaultTransport.RoundTrip(req) // no redirects, no cleaning
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("GET %s went to %q, want %q", path, b, want)
		}
	}
}

// A blocking request in flight (like a Consul blocking query) must not hold
// shutdown up: Serve cancels request contexts and returns promptly.
func TestGracefulShutdownEndsBlockingRequests(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		w.WriteHeader(http.StatusOK)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	reqDone := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/v1/kv/k?index=5")
		if err == nil {
			resp.Body.Close()
		}
		reqDone <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown waited for a blocking request")
	}
	if err := <-reqDone; err != nil {
		t.Fatalf("in-flight request failed instead of completing: %v", err)
	}
	// the engine is closed and the directory released
	if _, err := s.engine.Update(t.Context(), nil); err == nil {
		t.Fatal("engine still open after Serve returned")
	}
}
