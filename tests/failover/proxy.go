package failover

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from a loopback port to one target, and
// can cut its clients off mid-request: Cut first swallows every answer
// (requests still reach the target and may apply), then resets every
// connection, so that a client learns nothing of what it sent in that
// window.
type Proxy struct {
	ln     net.Listener
	target string
	mute   atomic.Bool
	refuse atomic.Pointer[func(net.Addr) bool] // see Refuse

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartProxy listens on a free loopback port and forwards to target.
func StartProxy(target string) (*Proxy, error) { return StartProxyAt("127.0.0.1:0", target) }

// StartProxyAt listens on listen (HOST:PORT) and forwards to target.
func StartProxyAt(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the proxy's HOST:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

func (p *Proxy) forward(c net.Conn) {
	if f := p.refuse.Load(); f != nil && (*f)(c.RemoteAddr()) {
		c.Close()
		return
	}
	u, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { p.answer(c, u); done <- struct{}{} }()
	<-done
	p.drop(c, u)
	<-done
}

// answer copies the target's answers to the client, swallowing them while
// the proxy is muted.
func (p *Proxy) answer(c, u net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := u.Read(buf)
		if n > 0 && !p.mute.Load() {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) drop(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

// Cut swallows every answer for mute, then resets every connection (the
// clients see a reset, not a clean close) and forwards again: new
// connections are served at once.
func (p *Proxy) Cut(mute time.Duration) {
	p.mute.Store(true)
	time.Sleep(mute)
	p.mu.Lock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.mute.Store(false)
}

// Refuse resets the connections whose client address from reports, and
// refuses new ones, until Refuse(nil): one side of a partition.
func (p *Proxy) Refuse(from func(client net.Addr) bool) {
	if from == nil {
		p.refuse.Store(nil)
		return
	}
	p.refuse.Store(&from)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if from(c.RemoteAddr()) {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.Close()
			delete(p.conns, c)
		}
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
