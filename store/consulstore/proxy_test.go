package consulstore

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a TCP proxy in front of a server that counts the connections
// open through it (now and at the peak) and can stall: a stalled proxy
// keeps accepting and holding connections but forwards nothing, as a
// SIGSTOPped server whose kernel still completes handshakes: bytes
// already on their way and new ones are held until it resumes.
type proxy struct {
	ln      net.Listener
	target  string
	open    atomic.Int64
	peak    atomic.Int64
	total   atomic.Int64
	stalled atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.total.Add(1)
		n := p.open.Add(1)
		for {
			m := p.peak.Load()
			if n <= m || p.peak.CompareAndSwap(m, n) {
				break
			}
		}
		go p.handle(c)
	}
}

func (p *proxy) handle(c net.Conn) {
	defer func() {
		c.Close()
		p.untrack(c)
		p.open.Add(-1)
	}()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(s) {
		s.Close()
		return
	}
	defer func() {
		s.Close()
		p.untrack(s)
	}()
	done := make(chan struct{}, 2)
	go func() { p.pipe(s, c); s.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { p.pipe(c, s); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// pipe copies src to dst, holding every chunk while the proxy is stalled.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for n > 0 && p.stalled.Load() {
			time.Sleep(5 * time.Millisecond)
			if p.isClosed() {
				return
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns == nil
}
