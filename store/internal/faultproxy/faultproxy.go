// Package faultproxy puts a faulty network between a backend's client and
// its real server, for tests of unknown-outcome handling. It is stdlib
// only and test-only.
//
// HTTP is a reverse proxy for backends that speak HTTP/1.1 (S3, the
// Consul KV API, Azure Blob, the GCS JSON API). Rules pick requests and
// do one of these to them:
//
//   - Drop: forward the request, let the server apply it, and cut the
//     client's connection instead of answering (the answer is lost), or
//     answer Rule.Status instead of the server's answer.
//   - Late: read the request, hold it until its client has given up (its
//     connection closed, e.g. on a timeout) and the test calls Land, then
//     deliver it to the server. The caller never hears of it; the write
//     lands after the caller was told something.
//   - Refuse: answer Rule.Status without forwarding (0: cut the
//     connection), so the server never sees the request.
//
// TCP is a byte pipe for backends whose wire is not HTTP/1.1 (etcd's
// gRPC over HTTP/2), with the same two faults at the byte level.
//
// What a test then checks, whatever the backend: a write that went
// through a fault ends as a success that is true (the key holds it), as
// store.ErrUnknownOutcome, or as a conflict that is true — never a claim
// the store contradicts. See storetest's fault subtests for the
// store-level version of the same rule.
package faultproxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Action is what a Rule does to a request it matches.
type Action int

const (
	// Drop forwards the request and loses the answer.
	Drop Action = iota + 1
	// Late holds the request until its client gave up and Land is
	// called, then delivers it.
	Late
	// Refuse answers without forwarding.
	Refuse
)

func (a Action) String() string {
	switch a {
	case Drop:
		return "drop"
	case Late:
		return "late"
	case Refuse:
		return "refuse"
	}
	return "pass"
}

// Rule applies Action to the next Times requests that Match accepts
// (nil: any request). Rules are tried in the order added, so rules with
// a nil Match and Times 1 are a queue of faults for the next requests.
type Rule struct {
	Match  func(*http.Request) bool
	Action Action
	Times  int
	// Status is the answer of Drop (0: none, the connection is cut) and
	// of Refuse (0: the connection is cut), with Body (text/plain, or
	// application/xml when it starts with "<?xml").
	Status int
	Body   string
}

// Method matches requests with the given HTTP method (and, when header is
// not empty, carrying that header).
func Method(method, header string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && (header == "" || r.Header.Get(header) != "")
	}
}

// WriteRequest matches every request that may change state (any method but GET
// and HEAD).
func WriteRequest(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// HTTP is a fault-injecting reverse proxy to one HTTP server.
type HTTP struct {
	// URL is the proxy's base URL ("http://127.0.0.1:port").
	URL string
	// Addr is its HOST:PORT.
	Addr string

	target *url.URL
	client *http.Client

	mu    sync.Mutex
	rules []*Rule
	hits  map[Action]int
	gate  chan struct{} // closed by Land
	late  sync.WaitGroup
}

// NewHTTP starts a proxy to target (a base URL, or HOST:PORT for
// http://HOST:PORT), closed when the test ends. The Host header is kept,
// so signed requests (SigV4) stay valid.
func NewHTTP(t testing.TB, target string) *HTTP {
	t.Helper()
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &HTTP{target: u, hits: map[Action]int{}, gate: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	srv := httptest.NewServer(p)
	p.URL, p.Addr = srv.URL, srv.Listener.Addr().String()
	t.Cleanup(func() {
		p.Land()
		srv.Close()
	})
	return p
}

// Add queues a rule; rules are tried in the order added.
func (p *HTTP) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &r)
}

// Clear drops every rule not used up yet.
func (p *HTTP) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Hits says how many requests got action a so far.
func (p *HTTP) Hits(a Action) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[a]
}

// Land lets every held Late request through once its client has gone,
// and returns when each has been answered by the server (the write has
// landed or been refused). Late requests after it wait for the next Land.
func (p *HTTP) Land() {
	p.mu.Lock()
	close(p.gate)
	p.gate = make(chan struct{})
	p.mu.Unlock()
	p.late.Wait()
}

func (p *HTTP) take(r *http.Request) (Rule, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rule := range p.rules {
		if rule.Times > 0 && (rule.Match == nil || rule.Match(r)) {
			rule.Times--
			p.hits[rule.Action]++
			if rule.Action == Late {
				p.late.Add(1)
			}
			return *rule, p.gate
		}
	}
	return Rule{}, nil
}

// answer writes rule's Status and Body, or cuts the connection.
func answer(w http.ResponseWriter, rule Rule) {
	if rule.Status == 0 {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	ct := "text/plain"
	if strings.HasPrefix(rule.Body, "<?xml") {
		ct = "application/xml"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(rule.Status)
	io.WriteString(w, rule.Body)
}

func (p *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rule, gate := p.take(r)
	action := rule.Action
	if action == Refuse {
		io.Copy(io.Discard, r.Body)
		answer(w, rule)
		return
	}
	if action == Late {
		defer p.late.Done()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		// The server cancels r's context when the client's connection
		// closes: the caller has given up on this request.
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		<-gate
		resp, err := p.forward(context.Background(), r, bytes.NewReader(body))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return
	}
	resp, err := p.forward(r.Context(), r, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if action == Drop {
		io.Copy(io.Discard, resp.Body) // applied; the client never hears of it
		answer(w, rule)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func (p *HTTP) forward(ctx context.Context, r *http.Request, body io.Reader) (*http.Response, error) {
	u := *p.target
	u.Path, u.RawPath = r.URL.Path, r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		out.Body = http.NoBody
	}
	return p.client.Transport.RoundTrip(out)
}

// TCP is a fault-injecting byte pipe to one TCP server.
type TCP struct {
	// Addr is the pipe's HOST:PORT.
	Addr string

	target string
	ln     net.Listener

	mu    sync.Mutex
	conns map[*pipe]struct{}
	mode  Action // armed fault, 0: none
	held  chan struct{}
}

type pipe struct{ client, server net.Conn }

// NewTCP starts a pipe to target (HOST:PORT), closed when the test ends.
func NewTCP(t testing.TB, target string) *TCP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCP{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[*pipe]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		p.Land()
		ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.client.Close()
			c.server.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *TCP) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pp := &pipe{client: c, server: s}
		p.mu.Lock()
		p.conns[pp] = struct{}{}
		p.mu.Unlock()
		go p.up(pp)
		go p.down(pp)
	}
}

func (p *TCP) forget(pp *pipe) {
	pp.client.Close()
	pp.server.Close()
	p.mu.Lock()
	delete(p.conns, pp)
	p.mu.Unlock()
}

// up copies client → server; while a Late fault is armed the bytes are
// held (in order) until Land.
func (p *TCP) up(pp *pipe) {
	defer p.forget(pp)
	buf := make([]byte, 32<<10)
	for {
		n, err := pp.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			p.mu.Unlock()
			if held != nil {
				<-held
			}
			if _, werr := pp.server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if held := p.heldGate(); held != nil {
				<-held // deliver what the client sent before it gave up
			}
			return
		}
	}
}

func (p *TCP) heldGate() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// down copies server → client; while a Drop fault is armed the first
// answer bytes are swallowed and the client's connection is cut.
func (p *TCP) down(pp *pipe) {
	defer p.forget(pp)
	buf := make([]byte, 32<<10)
	for {
		n, err := pp.server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop := p.mode == Drop
			if drop {
				p.mode = 0
			}
			p.mu.Unlock()
			if drop {
				return // the answer is lost with the connection
			}
			if _, werr := pp.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// DropNext arms a Drop: the next bytes the server sends on any
// connection are swallowed and that connection is cut, so the request
// they answer was applied and its answer is lost.
func (p *TCP) DropNext() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = Drop
}

// Hold arms a Late fault: from now on, bytes the clients send are held,
// in order, until Land. A client that gives up meanwhile (a timeout)
// still has what it sent delivered at Land.
func (p *TCP) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Land delivers every held byte and stops holding; DropNext is disarmed.
func (p *TCP) Land() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
	p.mode = 0
}
