package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// benchHTTP sends one HTTP request of the bench to a latchkey (or Consul)
// server and returns the status and the body.
type benchHTTP interface {
	do(ctx context.Context, method, target string, body []byte) (code int, answer []byte, err error)
}

// Bench HTTP clients (--http-client).
const (
	benchClientLean    = "lean"
	benchClientNetHTTP = "net/http"
)

// netHTTPClient is net/http's Client, as consul/api uses it: a Transport
// with a connection pool, a writer and a reader goroutine per connection.
type netHTTPClient struct {
	base, token string
	c           *http.Client
}

func (h *netHTTPClient) do(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+target, r)
	if err != nil {
		return 0, nil, err
	}
	if h.token != "" {
		req.Header.Set("X-Consul-Token", h.token)
	}
	code, b, _, err := do(h.c, req)
	return code, b, err
}

// leanHTTPClient is a synchronous HTTP/1.1 client for the bench's own
// load: each request takes an idle keep-alive connection (or dials one),
// writes the request and reads the answer on the calling goroutine with
// net/http's own response parser (http.ReadResponse: status line, headers,
// Content-Length or chunked bodies), and puts the connection back unless
// the answer said to close it. It does what net/http's Transport does for
// these requests without the Transport's two goroutines per connection and
// the hand-offs between them, so that the CPU the bench takes from the
// cores it shares with the server is close to what a lean client costs
// (the etcd side uses etcd's own gRPC client). Plain http:// only.
type leanHTTPClient struct {
	host, token string
	idle        chan *leanConn
	dial        func(ctx context.Context) (net.Conn, error)
}

type leanConn struct {
	c        net.Conn
	r        *bufio.Reader
	req      []byte
	deadline time.Time // the deadline last set on c
}

func newLeanHTTPClient(host, token string, conns int) *leanHTTPClient {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &leanHTTPClient{host: host, token: token, idle: make(chan *leanConn, conns),
		dial: func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", host) }}
}

// leanRequestTimeout bounds a request of the lean client when its context
// has no deadline; leanDeadlineGrace is how long after its context's
// deadline a request may still finish (so that a connection timing out
// always finds its context ended, and a request in flight at the end of a
// measurement completes instead of failing).
const (
	leanRequestTimeout = 30 * time.Second
	leanDeadlineGrace  = time.Second
)

func (h *leanHTTPClient) get(ctx context.Context) (*leanConn, error) {
	select {
	case c := <-h.idle:
		return c, nil
	default:
	}
	nc, err := h.dial(ctx)
	if err != nil {
		return nil, err
	}
	return &leanConn{c: nc, r: bufio.NewReaderSize(nc, 4096)}, nil
}

func (h *leanHTTPClient) put(c *leanConn) {
	select {
	case h.idle <- c:
	default:
		c.c.Close()
	}
}

// close closes the idle connections.
func (h *leanHTTPClient) close() {
	for {
		select {
		case c := <-h.idle:
			c.c.Close()
		default:
			return
		}
	}
}

func (h *leanHTTPClient) do(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	c, err := h.get(ctx)
	if err != nil {
		return 0, nil, err
	}
	// The connection's deadline follows the context's (the end of the
	// measurement), set once per measurement rather than per request.
	dl, ok := ctx.Deadline()
	if ok {
		dl = dl.Add(leanDeadlineGrace)
	} else {
		dl = time.Now().Add(leanRequestTimeout)
	}
	if !dl.Equal(c.deadline) {
		if err := c.c.SetDeadline(dl); err != nil {
			c.c.Close()
			return 0, nil, err
		}
		c.deadline = dl
	}
	c.req = append(c.req[:0], method...)
	c.req = append(append(append(c.req, ' '), target...), " HTTP/1.1\r\nHost: "...)
	c.req = append(append(c.req, h.host...), "\r\nUser-Agent: latchkey-bench\r\n"...)
	if h.token != "" {
		c.req = append(append(append(c.req, "X-Consul-Token: "...), h.token...), "\r\n"...)
	}
	if body != nil {
		c.req = strconv.AppendInt(append(c.req, "Content-Length: "...), int64(len(body)), 10)
		c.req = append(c.req, "\r\n"...)
	}
	c.req = append(append(c.req, "\r\n"...), body...)
	if _, err := c.c.Write(c.req); err != nil {
		c.c.Close()
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.c.Close()
		return 0, nil, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBenchBody+1))
	if err == nil && len(b) > maxBenchBody {
		err = errors.New("answer larger than the bench reads")
	}
	if err != nil {
		c.c.Close()
		return 0, nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	if resp.Close {
		c.c.Close()
	} else {
		h.put(c)
	}
	return resp.StatusCode, b, nil
}
