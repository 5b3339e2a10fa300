package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// serving is a Server being served on 127.0.0.1:0 until stop is called.
type serving struct {
	*Server
	url  string
	stop context.CancelFunc
	done chan error
}

// serveT starts a server on dir; wrap, when set, wraps its handler.
func serveT(t *testing.T, dir string, timeout time.Duration, wrap func(http.Handler) http.Handler) *serving {
	t.Helper()
	s, err := New(Config{DataDir: dir, NoSync: true, ShutdownTimeout: timeout, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		s.handler = wrap(s.handler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	sv := &serving{Server: s, url: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { sv.done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-sv.done })
	return sv
}

// stopped waits for Serve to return after stop, at most limit.
func (sv *serving) stopped(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case err := <-sv.done:
		sv.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(limit):
		t.Fatalf("Serve still running %v after shutdown began", limit)
	}
}

// A Consul blocking query in flight must not hold shutdown up: it answers
// at once with the current state, as on its own timeout.
func TestShutdownEndsBlockingQueries(t *testing.T) {
	sv := serveT(t, t.TempDir(), time.Minute, nil)
	type answer struct {
		code int
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("%s/v1/kv/k?index=%d&wait=10m", sv.url, sv.engine.Index()))
		if err != nil {
			got <- answer{err: err}
			return
		}
		resp.Body.Close()
		got <- answer{code: resp.StatusCode}
	}()
	for sv.apis.consulStats().BlockingQueries != 1 {
		time.Sleep(time.Millisecond)
	}
	sv.stop()
	sv.stopped(t, 10*time.Second)
	if a := <-got; a.err != nil || a.code != http.StatusNotFound {
		t.Fatalf("blocking query on a missing key at shutdown: %d %v, want its normal 404", a.code, a.err)
	}
}

// Shutdown drains: a write whose request is in flight when shutdown begins
// (its body still arriving) completes, is acknowledged, and is on disk
// afterwards. Cancelling every request at once would fail it instead.
func TestShutdownDrainsWritesInFlight(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{}, 1)
	sv := serveT(t, dir, time.Minute, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			h.ServeHTTP(w, r)
		})
	})
	pr, pw := io.Pipe()
	type answer struct {
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPut, sv.url+"/v1/kv/drained", pr)
		req.ContentLength = 10
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{body: strings.TrimSpace(string(b))}
	}()
	io.WriteString(pw, "hello")
	<-started
	sv.stop()
	// Wait until shutdown has really begun: the listener refuses new
	// connections.
	addr := strings.TrimPrefix(sv.url, "http://")
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(time.Millisecond)
	}
	io.WriteString(pw, "world")
	pw.Close()
	if a := <-got; a.err != nil || a.body != "true" {
		t.Fatalf("write in flight at shutdown: %q %v, want it acknowledged (true)", a.body, a.err)
	}
	sv.stopped(t, 10*time.Second)
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.View(func(tx *engine.Tx) error {
		if kv, ok, err := consulmodel.Get(tx, "drained"); !ok || string(kv.Value) != "helloworld" {
			t.Errorf("acknowledged write at shutdown: present=%v value %q (%v)", ok, kv.Value, err)
		}
		return nil
	})
}

// Draining is bounded: a request still running after ShutdownTimeout is
// cancelled and its connection closed, and the engine is closed.
func TestShutdownIsBounded(t *testing.T) {
	started := make(chan struct{}, 1)
	sv := serveT(t, t.TempDir(), 100*time.Millisecond, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			<-r.Context().Done() // a handler that only ends when cancelled
		})
	})
	go func() {
		if resp, err := http.Get(sv.url + "/bucket/stuck"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	sv.stop()
	sv.stopped(t, 10*time.Second)
	if _, err := sv.engine.Update(t.Context(), nil); err == nil {
		t.Fatal("engine still open after Serve returned")
	}
}
