package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConsulCASPair measures one round of the loop every Consul CAS
// user runs — GET /v1/kv/K, then PUT /v1/kv/K?cas=ModifyIndex with a fresh
// 128-byte value — through the whole server (routing, metrics, the Consul
// API, the engine), fsync off so that CPU and allocations are what is
// measured. One op is one GET+PUT pair.
//
//   - handler: the two requests go straight to Server.Handler() (no
//     net/http server): what our own code costs.
//
//   - http: over keep-alive loopback connections to Server.Serve (one per
//     client, each client on a key of its own), with a client that writes
//     the request bytes and reads each answer by its Content-Length, so
//     that B/op and allocs/op are (nearly all) the server's, net/http
//     included. With 64 clients the engine's group commit shares one
//     commit among several PUTs, as in production. cpu-µs/op is the
//     process CPU per pair (server and that thin client), gc-cpu-µs/op
//     and gcs/1k-op what the garbage costs (run with GOGC=… to compare).
//
//   - durable: the same over HTTP, fsync on (the write-ahead log, as
//     latchkey serve runs): group commit batches as in production, so
//     bbolt's per-commit costs (its meta page, the pages it rewrites) are
//     shared as there. ns/op at 1 client is the pair's latency.
//
//   - floor: the same client against a net/http server that only answers
//     (no routing, no Consul API, no engine): the part of http's cost that
//     is net/http and the loopback connections, not ours.
//
//     go test -run '^$' -bench ConsulCASPair -benchmem ./server
func BenchmarkConsulCASPair(b *testing.B) {
	b.Run("handler", benchPairHandler)
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("http/clients=%d", clients), func(b *testing.B) { benchPairHTTP(b, clients, true) })
	}
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("durable/clients=%d", clients), func(b *testing.B) { benchPairHTTP(b, clients, false) })
	}
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("refused/clients=%d", clients), func(b *testing.B) { benchPairRefused(b, clients) })
	}
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("floor/clients=%d", clients), func(b *testing.B) { benchPairFloor(b, clients) })
	}
}

func newPairServer(b testing.TB, noSync bool) *Server {
	b.Helper()
	srv, err := New(Config{DataDir: b.TempDir(), NoSync: noSync, AccessKey: "BENCHACCESSKEY",
		SecretKey: "bench-secret-key-0123456789", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// pairValue is the 128-byte value of write n: never written before.
func pairValue(v []byte, n int) []byte {
	copy(v, strconv.AppendInt(v[:0:0], int64(n), 10))
	return v
}

func benchPairHandler(b *testing.B) {
	srv := newPairServer(b, true)
	defer srv.Close()
	h := srv.Handler()
	const key = "bench/pair"
	get, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8500/v1/kv/"+key, nil)
	put, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:8500/v1/kv/"+key+"?cas=0", nil)
	val := bytes.Repeat([]byte("v"), 128)
	body := bytes.NewReader(nil)
	put.Body = io.NopCloser(body)
	put.ContentLength = int64(len(val))
	w := &benchWriter{h: http.Header{}}
	var idx uint64
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		w.reset()
		h.ServeHTTP(w, get)
		switch w.code {
		case http.StatusOK:
			var err error
			if idx, err = strconv.ParseUint(w.h.Get("X-Consul-Index"), 10, 64); err != nil {
				b.Fatal(err)
			}
		case http.StatusNotFound:
			idx = 0
		default:
			b.Fatalf("GET: %d %s", w.code, w.body.Bytes())
		}
		w.reset()
		body.Reset(pairValue(val, n))
		put.URL.RawQuery = "cas=" + strconv.FormatUint(idx, 10)
		h.ServeHTTP(w, put)
		if w.code != http.StatusOK || w.body.String() != "true" {
			b.Fatalf("PUT ?cas=%d: %d %s", idx, w.code, w.body.Bytes())
		}
	}
}

// benchWriter is a ResponseWriter that keeps the status and body.
type benchWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *benchWriter) reset() { clear(w.h); w.code = 0; w.body.Reset() }

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// serveLoopback serves srv on a loopback port until stop (which waits
// for Serve to return, closing srv) and returns its address.
func serveLoopback(b testing.TB, srv *Server) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return ln.Addr().String(), func() { cancel(); <-done }
}

func benchPairHTTP(b *testing.B, clients int, noSync bool) {
	srv := newPairServer(b, noSync)
	addr, stop := serveLoopback(b, srv)
	defer stop()
	runPairs(b, clients, addr, "")
	if st := srv.engine.Stats(); !noSync && st.Commits > 0 {
		b.ReportMetric(float64(st.Updates)/float64(st.Commits), "upd/commit")
	}
}

// benchPairFloor is the pair against a net/http server that does nothing
// but answer as the Consul API would (a 200 with X-Consul-Index and an
// entry of the same size to the GET, "true" to the PUT): what net/http,
// the loopback connections and the thin client cost by themselves. What
// http/clients=N costs beyond it is the server's own code.
func benchPairFloor(b *testing.B, clients int) {
	entry := []byte(`[{"LockIndex":0,"Key":"bench/pair1","Flags":0,"Value":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("v"), 128)) + `","CreateIndex":5,"ModifyIndex":9}]`)
	var index atomic.Uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPut {
			_, _ = io.Copy(io.Discard, r.Body)
			index.Add(1)
			_, _ = w.Write([]byte("true"))
			return
		}
		w.Header().Set("X-Consul-Index", strconv.FormatUint(index.Load(), 10))
		_, _ = w.Write(entry)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	defer hs.Close()
	runPairs(b, clients, ln.Addr().String(), "")
}

// benchPairRefused is the losing side of a hot key over HTTP, fsync on:
// every client GETs one shared key and PUTs ?cas=1, an index long stale,
// answered false. Set beside durable/clients=N, it is what a refused
// attempt costs next to an applied one (cpu-µs/op per pair); no refusal
// may commit.
func benchPairRefused(b *testing.B, clients int) {
	srv := newPairServer(b, false)
	addr, stop := serveLoopback(b, srv)
	defer stop()
	c := newConsulReq(b, srv, "bench/hot")
	for n := range 2 { // the key exists, and index 1 is stale
		if !c.cas(b, c.read(b), n) {
			b.Fatal("setup cas refused")
		}
	}
	commits := srv.engine.Stats().Commits
	runPairs(b, clients, addr, "bench/hot")
	if n := srv.engine.Stats().Commits - commits; n != 0 {
		b.Fatalf("refused cas made %d commits", n)
	}
}

// runPairs drives GET+PUT pairs at addr from clients connections and
// reports the process's CPU and GC cost per pair. With stale, a key
// name, every client reads it and PUTs ?cas=1, which must be refused;
// otherwise each client CASes a key of its own on the index it read.
func runPairs(b *testing.B, clients int, addr, stale string) {
	var next atomic.Int64
	gc0 := gcStats()
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		c := &pairClient{conn: conn, r: bufio.NewReader(conn), host: addr}
		key := "/v1/kv/bench/pair" + strconv.FormatInt(next.Add(1), 10)
		want := "true"
		if stale != "" {
			key, want = "/v1/kv/"+stale, "false"
		}
		val := bytes.Repeat([]byte("v"), 128)
		for n := 0; pb.Next(); n++ {
			code, idx, _, err := c.do("GET", key, nil)
			switch {
			case err != nil:
				b.Error(err)
				return
			case code == http.StatusNotFound:
				idx = 0
			case code != http.StatusOK:
				b.Errorf("GET: %d", code)
				return
			}
			if stale != "" {
				idx = 1
			}
			code, _, answer, err := c.do("PUT", key+"?cas="+strconv.FormatUint(idx, 10), pairValue(val, n))
			if err != nil || code != http.StatusOK || string(answer) != want {
				b.Errorf("PUT ?cas=%d: %d %q %v", idx, code, answer, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	gc := gcStats()
	b.ReportMetric((gc[0]-gc0[0])*1e6/float64(b.N), "gc-cpu-µs/op")
	b.ReportMetric((gc[1]-gc0[1])*1000/float64(b.N), "gcs/1k-op")
}

// gcStats are the GC's CPU seconds and cycles so far (runtime/metrics),
// to weigh GOGC settings: a pair's GC cost is what its garbage costs.
func gcStats() [2]float64 {
	s := []rtmetrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	rtmetrics.Read(s)
	return [2]float64{s[0].Value.Float64(), float64(s[1].Value.Uint64())}
}

// pairClient sends requests over one connection and reads each answer's
// status, X-Consul-Index and body, framed by Content-Length (the server
// always sends it on these answers), allocating next to nothing, so that
// what the benchmark counts is the server's.
type pairClient struct {
	conn net.Conn
	r    *bufio.Reader
	host string
	req  []byte
	body []byte
}

func (c *pairClient) do(method, target string, body []byte) (code int, index uint64, answer []byte, err error) {
	c.req = append(c.req[:0], method...)
	c.req = append(append(append(c.req, ' '), target...), " HTTP/1.1\r\nHost: "...)
	c.req = append(append(c.req, c.host...), "\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n"...)
	if body != nil {
		c.req = strconv.AppendInt(append(c.req, "Content-Length: "...), int64(len(body)), 10)
		c.req = append(c.req, "\r\n"...)
	}
	c.req = append(append(c.req, "\r\n"...), body...)
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, 0, nil, err
	}
	length := -1
	for first := true; ; first = false {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, 0, nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if first {
			if len(line) < 12 {
				return 0, 0, nil, fmt.Errorf("bad status line %q", line)
			}
			code, _ = strconv.Atoi(string(line[9:12]))
			continue
		}
		if len(line) == 0 {
			break
		}
		name, v, _ := bytes.Cut(line, []byte(": "))
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length, _ = strconv.Atoi(string(v))
		case bytes.EqualFold(name, []byte("X-Consul-Index")):
			index, _ = strconv.ParseUint(string(v), 10, 64)
		}
	}
	if length < 0 {
		return 0, 0, nil, fmt.Errorf("%s %s: %d answer without Content-Length", method, target, code)
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		return 0, 0, nil, err
	}
	return code, index, c.body, nil
}

// BenchmarkConsulCASRefused measures the losing side of a hot key: PUT
// /v1/kv/K?cas=N with an N that is no longer K's ModifyIndex, answered
// false, through Server.Handler() (no net/http server) on a durable
// server (the write-ahead log, as latchkey serve runs). One op is one
// refused PUT; cpu-µs/op is the process CPU it costs (the engine's writer
// included). A refusal changes nothing, so it must cost no fsync, no
// index and no watcher wakeup: Stats().Commits must not move.
//
//	go test -run '^$' -bench ConsulCASRefused -benchmem ./server
func BenchmarkConsulCASRefused(b *testing.B) {
	srv := newPairServer(b, false)
	defer srv.Close()
	h := srv.Handler()
	const key = "bench/refused"
	val := bytes.Repeat([]byte("v"), 128)
	body := bytes.NewReader(nil)
	put, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:8500/v1/kv/"+key, nil)
	put.Body = io.NopCloser(body)
	put.ContentLength = int64(len(val))
	w := &benchWriter{h: http.Header{}}
	for range 2 { // two writes: the key exists and index 1 is stale
		w.reset()
		body.Reset(val)
		h.ServeHTTP(w, put)
		if w.code != http.StatusOK || w.body.String() != "true" {
			b.Fatalf("PUT: %d %s", w.code, w.body.Bytes())
		}
	}
	put.URL.RawQuery = "cas=1"
	commits := srv.engine.Stats().Commits
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		w.reset()
		body.Reset(pairValue(val, n))
		h.ServeHTTP(w, put)
		if w.code != http.StatusOK || w.body.String() != "false" {
			b.Fatalf("PUT ?cas=1: %d %s", w.code, w.body.Bytes())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	if c := srv.engine.Stats().Commits; c != commits {
		b.Fatalf("%d refused CAS made %d commits", b.N, c-commits)
	}
}
