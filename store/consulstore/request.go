package consulstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// DefaultRequestTimeout is the default Options.RequestTimeout.
const DefaultRequestTimeout = 10 * time.Second

// DefaultHedgeDelay is the default Options.HedgeDelay.
const DefaultHedgeDelay = time.Second

// DefaultBackPressureWait is the default Options.BackPressureWait.
const DefaultBackPressureWait = 30 * time.Second

// endpoint is one Consul address of a Store: its shared pool and a client
// (with the Store's token and datacenter) that sends through it.
type endpoint struct {
	addr string
	pool *pool
	c    *api.Client
}

// endpoints are a Store's addresses and which one is in use. Every
// request goes to the one in use; a failure that says the address may be
// down (no answer in time, a refused connection, a 5xx) moves the next
// request on to the next address, round robin.
type endpoints struct {
	list []*endpoint
	cur  atomic.Uint32
}

func (e *endpoints) current() (int, *endpoint) {
	i := int(e.cur.Load()) % len(e.list)
	return i, e.list[i]
}

// moveOn makes the address after i the one in use, unless another
// request already moved on from i.
func (e *endpoints) moveOn(i int) {
	if len(e.list) > 1 {
		e.cur.CompareAndSwap(uint32(i), uint32((i+1)%len(e.list)))
	}
}

// backPressure is the retry policy of a request answered 429: 50ms
// doubling up to 2s, full jitter, for up to Options.BackPressureWait in
// all.
var backPressure = backoff.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second}

// readAttempts is how many times a read (or a write that never left) is
// tried: once on every address, at once. Past that the caller's own
// retry loop (cas, lease), which reports progress and owns the
// deadline, takes over with ErrTransient.
func (s *Store) readAttempts() int { return len(s.eps.list) }

// do runs one exchange with Consul, fn, against the address in use, each
// try under its own deadline (Options.RequestTimeout, plus wait and
// Consul's wait/16 jitter for a blocking query). It returns fn's last
// error for opError to classify. On the way:
//
//   - 429 (Consul's per-client connection limit or its rate limit, both
//     refusing before anything is applied) is back-pressure: the request
//     waits and goes again, on the next address when there is one, for up
//     to Options.BackPressureWait; the caller sees ErrTransient only past
//     that.
//   - a request that never reached the address (dial error), read or
//     write, goes to the next address, as a read that failed transiently
//     (no answer in time, a lost connection, a 5xx) does, once per
//     address (readAttempts).
//   - a write that may have been sent is never repeated here: its error
//     (ErrUnknownOutcome for a timeout) goes back to the caller, which
//     settles it (Put re-reads), and the next request goes to the next
//     address.
func (s *Store) do(ctx context.Context, write bool, wait time.Duration, fn func(context.Context, *api.Client) error) error {
	limit := s.opts.RequestTimeout
	if wait > 0 {
		limit += wait + wait/16
	}
	var pressured time.Time
	var pressures, failures int
	for {
		i, ep := s.eps.current()
		actx, timedOut, cancel := deadlineOnceSent(ctx, limit)
		err := fn(actx, ep.c)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if timedOut.Load() {
			err = fmt.Errorf("%s: no answer within %v (Options.RequestTimeout): %w", ep.addr, limit, err)
		}
		status, _ := statusOf(err)
		var delay time.Duration
		switch {
		case status == http.StatusTooManyRequests:
			if pressures == 0 {
				pressured = time.Now()
			} else if time.Since(pressured) >= s.opts.BackPressureWait {
				return err
			}
			pressures++
			s.eps.moveOn(i)
			delay = backPressure.Delay(pressures)
		case status == 0 && isDialError(err), !write && kindOf(false, status, err) == store.ErrTransient:
			s.eps.moveOn(i)
			if failures++; failures >= s.readAttempts() {
				return err
			}
		default:
			if write && kindOf(true, status, err) == store.ErrUnknownOutcome {
				s.eps.moveOn(i)
			}
			return err
		}
		if werr := backoff.Sleep(ctx, delay); werr != nil {
			return errors.Join(err, werr)
		}
	}
}

// read runs fn, a read, through do. A read that is not a blocking query
// (wait 0) is hedged: with no answer after Options.HedgeDelay it is sent
// again, to the next address (which becomes the one in use), while the
// first stays in flight, and so on every HedgeDelay up to hedgeLanes
// sends; the first answer wins and the others are cancelled. A read
// changes nothing, so sending it twice is harmless; and a request held by
// a server that cannot answer (stopped, cut off from its leader, or
// forwarding to a leader that stopped: Consul holds such requests until
// the old leader resumes) is overtaken by one sent after the cluster
// recovered, instead of waiting out its RequestTimeout.
func read[T any](s *Store, ctx context.Context, wait time.Duration, fn func(context.Context, *api.Client) (T, error)) (T, error) {
	lane := func(ctx context.Context) (T, error) {
		var v T
		err := s.do(ctx, false, wait, func(ctx context.Context, c *api.Client) error {
			var err error
			v, err = fn(ctx, c)
			return err
		})
		return v, err
	}
	if wait > 0 || s.opts.HedgeDelay < 0 {
		return lane(ctx)
	}
	type result struct {
		v   T
		err error
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	most := s.hedgeLanes()
	results := make(chan result, most)
	// The delay counts from when the last send got its connection, as
	// RequestTimeout does: waiting for one of the pool's connections is
	// no sign that the address is down, and hedging then would only add
	// to the queue.
	sent := make(chan struct{}, most)
	launch := func() {
		var once sync.Once
		lctx := httptrace.WithClientTrace(hctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
			once.Do(func() { sent <- struct{}{} })
		}})
		go func() {
			v, err := lane(lctx)
			results <- result{v, err}
		}()
	}
	launch()
	lanes, pending := 1, 1
	timer := time.NewTimer(s.opts.HedgeDelay)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-sent:
			timer.Reset(s.opts.HedgeDelay)
		case r := <-results:
			pending--
			if r.err == nil || pending == 0 || ctx.Err() != nil {
				return r.v, r.err
			}
			if status, _ := statusOf(r.err); kindOf(false, status, r.err) != store.ErrTransient {
				return r.v, r.err // an answer (403, 4xx): the others would get it too
			}
		case <-timer.C:
			if lanes < most {
				i, _ := s.eps.current()
				s.eps.moveOn(i)
				launch()
				lanes++
				pending++
			}
		}
	}
}

// hedgeLanes is how many sends a hedged read makes at most: every address
// twice and one more, so that, with every address holding its first
// sends, sends made after the cluster recovered still reach each.
func (s *Store) hedgeLanes() int { return 2*len(s.eps.list) + 1 }

// deadlineOnceSent returns a context that ends limit after the request
// made with it got its connection (so the wait for one of the pool's
// connections, bounded by ctx, does not count: it is no sign that Consul
// is down), and whether that happened.
func deadlineOnceSent(ctx context.Context, limit time.Duration) (context.Context, *atomic.Bool, context.CancelFunc) {
	actx, cancel := context.WithCancel(ctx)
	timedOut := new(atomic.Bool)
	var mu sync.Mutex
	var timer *time.Timer
	stopped := false
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		mu.Lock()
		defer mu.Unlock()
		if timer == nil && !stopped {
			timer = time.AfterFunc(limit, func() { timedOut.Store(true); cancel() })
		}
	}}
	return httptrace.WithClientTrace(actx, trace), timedOut, func() {
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}
