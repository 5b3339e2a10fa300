package consulstore

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// DefaultMaxConns is the default Options.MaxConns: the most connections
// one process opens to one Consul address, all its Stores together. Consul
// lets a client IP hold limits.http_max_conns_per_client connections (200
// by default, idle keep-alive ones included) and answers the next 429; 64
// leaves room for three such processes (or CLIs, or containers behind one
// NAT address) and for Consul's own tools.
const DefaultMaxConns = 64

// pool is the connection budget of one Consul address in this process:
// one http.Transport that opens at most maxConns connections to it
// (requests beyond wait for one, in order, or for their ctx), shared by
// every Store opened for that address with the same budget, and the
// blocking-query slots, a quarter of the budget, so that watches never
// take the connections requests need.
type pool struct {
	key   string
	refs  int // Stores holding it; guarded by pools.mu
	hc    *http.Client
	tr    *http.Transport
	slots chan struct{} // one token per blocking query in flight
}

var pools = struct {
	mu sync.Mutex
	m  map[string]*pool
}{m: map[string]*pool{}}

// watchSlots is how many blocking queries a pool of maxConns runs at
// once: a quarter, at least one.
func watchSlots(maxConns int) int { return max(1, maxConns/4) }

// acquirePool returns the pool of (scheme, address, maxConns), creating
// it on first use; tlsCfg is the TLS setup (from the environment, as the
// official client reads it) used when it is created. Each call is paired
// with one releasePool.
func acquirePool(scheme, address string, maxConns int, tlsCfg api.TLSConfig) (*pool, error) {
	key := fmt.Sprintf("%s|%s|%d", scheme, address, maxConns)
	pools.mu.Lock()
	defer pools.mu.Unlock()
	if p := pools.m[key]; p != nil {
		p.refs++
		return p, nil
	}
	tr := api.DefaultConfig().Transport
	tr.DialContext = capDial(tr.DialContext, maxConns)
	tr.MaxConnsPerHost = maxConns
	tr.MaxIdleConnsPerHost = maxConns
	tr.MaxIdleConns = maxConns
	hc, err := api.NewHttpClient(tr, tlsCfg)
	if err != nil {
		return nil, err
	}
	p := &pool{key: key, refs: 1, hc: hc, tr: tr, slots: make(chan struct{}, watchSlots(maxConns))}
	pools.m[key] = p
	return p, nil
}

// releasePool drops one reference; the last closes the idle connections
// and forgets the pool.
func releasePool(p *pool) {
	pools.mu.Lock()
	defer pools.mu.Unlock()
	if p.refs--; p.refs > 0 {
		return
	}
	delete(pools.m, p.key)
	p.tr.CloseIdleConnections()
}

// dialTimeout bounds one TCP (and TLS) connect to an address, which
// Options.RequestTimeout does not cover: an address that does not even
// accept connections (a partitioned host) is moved on from after it.
const dialTimeout = 5 * time.Second

// capDial wraps dial so that at most max connections it made are open at
// once: a dial past that waits for one to close (or for ctx). The
// transport's MaxConnsPerHost counts a connection as gone when it gives up
// on it, which can be before the socket is closed; this counts sockets,
// which is what Consul counts.
func capDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), max int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	open := make(chan struct{}, max)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case open <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := dial(dctx, network, addr)
		cancel()
		if err != nil {
			<-open
			return nil, err
		}
		return &countedConn{Conn: c, free: func() { <-open }}, nil
	}
}

// countedConn frees its slot once, on the first Close.
type countedConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
