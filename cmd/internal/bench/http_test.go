package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The lean client speaks HTTP/1.1 as net/http's server expects and reads
// what it answers with net/http's parser: a Content-Length body, a chunked
// one, the token header, the request body; it reuses a keep-alive
// connection and drops one the server closes.
func TestLeanHTTPClient(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/len":
			w.Write([]byte(r.Method + " " + r.URL.RawQuery + " " + r.Header.Get("X-Consul-Token") + " " + string(body)))
		case "/chunked":
			w.Write([]byte("part1 "))
			w.(http.Flusher).Flush()
			w.Write([]byte("part2"))
		case "/close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("gone"))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newLeanHTTPClient(strings.TrimPrefix(srv.URL, "http://"), "tok", 4)
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(method, target string, body []byte, wantCode int, want string) {
		t.Helper()
		code, got, err := c.do(ctx, method, target, body)
		if err != nil || code != wantCode || string(got) != want {
			t.Fatalf("%s %s = %d %q %v, want %d %q", method, target, code, got, err, wantCode, want)
		}
	}
	check("PUT", "/len?cas=7", []byte("value"), 200, "PUT cas=7 tok value")
	check("GET", "/len", nil, 200, "GET  tok ")
	check("GET", "/chunked", nil, 200, "part1 part2")
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for three keep-alive requests, want 1", n)
	}
	check("GET", "/close", nil, 404, "gone")
	check("GET", "/len", nil, 200, "GET  tok ")
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections after the server closed one, want 2", n)
	}
}
