package failover

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/textproto"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from a loopback port to one target, and
// can cut its clients off mid-request: Cut first swallows every answer
// (requests still reach the target and may apply), then resets every
// connection, so that a client learns nothing of what it sent in that
// window. A peer proxy (StartPeerProxy) also knows which member dialed
// each connection, so that Isolate can cut some links and not others.
type Proxy struct {
	ln     net.Listener
	target string
	mute   atomic.Bool
	peer   bool                                // learn each connection's source from its first request
	refuse atomic.Pointer[func(net.Addr) bool] // see Refuse

	mu      sync.Mutex
	conns   map[net.Conn]string // the client side's source ("" unknown) and the target side's
	blocked func(from string) bool
	closed  bool
	wg      sync.WaitGroup
}

// StartProxy listens on a free loopback port and forwards to target.
func StartProxy(target string) (*Proxy, error) {
	return startProxy("127.0.0.1:0", target, false)
}

// StartProxyAt listens on listen (HOST:PORT) and forwards to target.
func StartProxyAt(listen, target string) (*Proxy, error) {
	return startProxy(listen, target, false)
}

// StartPeerProxy is StartProxy for an etcd member's peer port: it reads
// the head of each connection's first HTTP request for the member that
// dialed it (etcd's peer transport names itself in X-Server-From on every
// request), so that Isolate can refuse connections by their source.
func StartPeerProxy(target string) (*Proxy, error) {
	return startProxy("127.0.0.1:0", target, true)
}

func startProxy(listen, target string, peer bool) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, peer: peer, conns: map[net.Conn]string{}}
	p.wg.Go(p.serve)
	return p, nil
}

// peerHeader is the header in which etcd's peer transport names the
// member that sends a request (its id in hex).
const peerHeader = "X-Server-From"

// maxHead bounds the request head a peer proxy reads.
const maxHead = 16 << 10

// source reads c's first request head, at most maxHead bytes within a
// second, and returns the bytes read and the sender's id ("" when the
// head names none).
func source(c net.Conn) ([]byte, string) {
	c.SetReadDeadline(time.Now().Add(time.Second))
	defer c.SetReadDeadline(time.Time{})
	var head []byte
	buf := make([]byte, 4<<10)
	for len(head) < maxHead && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	for _, line := range bytes.Split(head, []byte("\r\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && textproto.CanonicalMIMEHeaderKey(string(bytes.TrimSpace(k))) == peerHeader {
			return head, string(bytes.TrimSpace(v))
		}
	}
	return head, ""
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
	var head []byte
	from := ""
	if p.peer {
		head, from = source(c)
	}
	if p.isBlocked(from) {
		reset(c)
		return
	}
	u, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		c.Close()
		return
	}
	if _, err := u.Write(head); err != nil {
		c.Close()
		u.Close()
		return
	}
	if !p.track(from, c, u) {
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

// track records a connection pair from the source from; it refuses (and
// closes) it when the proxy is closed or the source is blocked.
func (p *Proxy) track(from string, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || (p.blocked != nil && p.blocked(from)) {
		for _, c := range cs {
			reset(c)
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = from
	}
	return true
}

func (p *Proxy) isBlocked(from string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked != nil && p.blocked(from)
}

// reset closes c with a reset, not a clean close.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// Isolate resets every connection whose source blocked names and
// refuses new ones from it until Heal. A client proxy knows no source
// (""); a peer proxy knows the dialing member's id.
func (p *Proxy) Isolate(blocked func(from string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = blocked
	for c, from := range p.conns {
		if blocked(from) {
			reset(c)
			delete(p.conns, c)
		}
	}
}

// Heal lets every source connect again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = nil
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
		reset(c)
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.mute.Store(false)
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

// Refuse resets the connections whose client address from reports, and
// refuses new ones, until Refuse(nil): one side of a partition, told by
// the address a connection comes from (Consul dials from its bind
// address). Isolate is the same for peers that name themselves instead.
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
