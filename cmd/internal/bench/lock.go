package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/consul/api"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// lockLocker is one waiter's handle on the benchmarked lock.
type lockLocker interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
	close()
}

// lockPeer makes lockers for one server and counts the requests they send.
type lockPeer struct {
	name     string
	requests atomic.Int64
	newer    func(key string) (lockLocker, error)
	closeAll func()
}

// lockResult is what one lock measurement saw.
type lockResult struct {
	peer                 string
	waiters              int
	handoffs             int64
	elapsed              time.Duration
	p50, p99             time.Duration
	requestsPerSecWaiter float64
}

// lockHold is how long each holder keeps the lock before releasing it.
const lockHold = time.Millisecond

func runLockBench(ctx context.Context, e *Env, cfg benchConfig) error {
	waiters, err := benchCounts("--waiters", cfg.waiters)
	if err != nil {
		return err
	}
	srv, err := openServer(ctx, e, cfg.url)
	if err != nil {
		return err
	}
	defer srv.stop()
	base := srv.url
	peers := []*lockPeer{consulLockPeer(base, cfg.token)}
	if cfg.etcd != "" {
		p, err := etcdLockPeer(strings.TrimPrefix(cfg.etcd, "http://"))
		if err != nil {
			return err
		}
		peers = append(peers, p)
	}
	defer func() {
		for _, p := range peers {
			p.closeAll()
		}
	}()
	prefix := benchPrefix()
	fmt.Fprintf(e.Stdout, "lock handoff: each holder holds %v, then releases; %v per measurement, keys under %s/\n\n", lockHold, cfg.dur, prefix)
	var results []lockResult
	for _, n := range waiters {
		for _, p := range peers {
			r, err := measureLock(ctx, p, fmt.Sprintf("%s/lock-%d", prefix, n), n, cfg.dur)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	printLockResults(e.Stdout, results)
	return nil
}

func printLockResults(w io.Writer, results []lockResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\twaiters\thandoffs/s\tp50\tp99\treq/s per waiter\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%.1f\t\n", r.peer, r.waiters,
			float64(r.handoffs)/r.elapsed.Seconds(), fmtLatency(r.p50), fmtLatency(r.p99), r.requestsPerSecWaiter)
	}
	tw.Flush()
}

// measureLock runs n waiters on key for dur. Each acquires, notes the
// time since the previous holder began its release (the handoff), holds
// for lockHold, notes the time and releases.
func measureLock(ctx context.Context, p *lockPeer, key string, n int, dur time.Duration) (lockResult, error) {
	lockers := make([]lockLocker, n)
	for i := range lockers {
		l, err := p.newer(key)
		if err != nil {
			return lockResult{}, fmt.Errorf("bench --lock %s: %w", p.name, err)
		}
		defer l.close()
		lockers[i] = l
	}
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var (
		mu          sync.Mutex
		released    time.Time // when the last holder began its release
		samples     []time.Duration
		firstErr    error
		errOnce     sync.Once
		requests0   = p.requests.Load()
		start       = time.Now()
		wg          sync.WaitGroup
		maxSamples  = maxBenchSamples
		recordError = func(err error) {
			if ctx.Err() == nil {
				errOnce.Do(func() { firstErr = err; cancel() })
			}
		}
	)
	for _, l := range lockers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := l.lock(ctx); err != nil {
					recordError(err)
					return
				}
				now := time.Now()
				mu.Lock()
				if !released.IsZero() && len(samples) < maxSamples {
					samples = append(samples, now.Sub(released))
				}
				mu.Unlock()
				time.Sleep(lockHold)
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				// Unlock on a fresh context: a holder must release even
				// when the measurement has just ended.
				uctx, ucancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := l.unlock(uctx)
				ucancel()
				if err != nil {
					recordError(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return lockResult{}, fmt.Errorf("bench --lock %s/%d: %w", p.name, n, firstErr)
	}
	if len(samples) == 0 {
		return lockResult{}, fmt.Errorf("bench --lock %s/%d: no handoff in %v", p.name, n, dur)
	}
	slices.Sort(samples)
	return lockResult{
		peer: p.name, waiters: n, handoffs: int64(len(samples)), elapsed: elapsed,
		p50: percentile(samples, 0.5), p99: percentile(samples, 0.99),
		requestsPerSecWaiter: float64(p.requests.Load()-requests0) / elapsed.Seconds() / float64(n),
	}, nil
}

// countingTransport counts the HTTP requests it carries.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// consulLockPeer uses the official Consul client's api.Lock, as `consul
// lock` does: a session per acquisition, acquire, blocking queries while
// waiting, release.
func consulLockPeer(base, token string) *lockPeer {
	p := &lockPeer{name: "latchkey"}
	hc := &http.Client{Transport: countingTransport{next: &http.Transport{
		MaxIdleConnsPerHost: benchMaxClients, IdleConnTimeout: 30 * time.Second}, n: &p.requests}}
	p.newer = func(key string) (lockLocker, error) {
		c, err := api.NewClient(&api.Config{Address: strings.TrimPrefix(base, "http://"), Token: token, HttpClient: hc})
		if err != nil {
			return nil, err
		}
		l, err := c.LockOpts(&api.LockOptions{Key: key, SessionTTL: "15s"})
		if err != nil {
			return nil, err
		}
		return &consulLocker{l: l}, nil
	}
	p.closeAll = func() { hc.CloseIdleConnections() }
	return p
}

type consulLocker struct{ l *api.Lock }

func (c *consulLocker) lock(ctx context.Context) error {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			close(stop) // abandons the attempt
		case <-done:
		}
	}()
	lost, err := c.l.Lock(stop)
	close(done)
	switch {
	case err != nil:
		return err
	case lost == nil && ctx.Err() != nil:
		return ctx.Err()
	case lost == nil:
		return errors.New("api.Lock returned without the lock")
	}
	return nil
}

func (c *consulLocker) unlock(context.Context) error { return c.l.Unlock() }
func (c *consulLocker) close()                       {}

// etcdLockPeer uses etcd's concurrency.Mutex over one session (lease) per
// waiter, as etcd's own lock recipes do; unary calls and stream opens
// count as requests.
func etcdLockPeer(endpoint string) (*lockPeer, error) {
	p := &lockPeer{name: "etcd"}
	count := func() { p.requests.Add(1) }
	var clients []*clientv3.Client
	p.closeAll = func() {
		for _, c := range clients {
			c.Close()
		}
	}
	p.newer = func(key string) (lockLocker, error) {
		c, err := clientv3.New(clientv3.Config{
			Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			DialOptions: []grpc.DialOption{
				grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					count()
					return invoker(ctx, method, req, reply, cc, opts...)
				}),
				grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
					count()
					return streamer(ctx, desc, cc, method, opts...)
				}),
			},
		})
		if err != nil {
			return nil, fmt.Errorf("etcd at %s: %w", endpoint, err)
		}
		clients = append(clients, c)
		s, err := concurrency.NewSession(c, concurrency.WithTTL(15))
		if err != nil {
			return nil, err
		}
		return &etcdLocker{s: s, m: concurrency.NewMutex(s, key)}, nil
	}
	return p, nil
}

type etcdLocker struct {
	s *concurrency.Session
	m *concurrency.Mutex
}

func (l *etcdLocker) lock(ctx context.Context) error   { return l.m.Lock(ctx) }
func (l *etcdLocker) unlock(ctx context.Context) error { return l.m.Unlock(ctx) }
func (l *etcdLocker) close()                           { l.s.Close() }
