package consulstore

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// WaitChange implements store.Watcher with Consul blocking queries,
// shared: every watcher of one key in this process (all Stores of the same
// addresses, token and datacenter) waits on one blocking query loop, so
// watches cost connections per key, not per waiter.
//
// It reads the key once (a plain, non-blocking read, as the first query
// of Consul's own watch loop) and returns nil at once if the version is
// no longer last. Otherwise it waits for the shared loop to see the key,
// at a Consul index past that read, with a version other than last. It
// returns ctx's error when ctx ends first, ErrClosed when the store is
// closed, and the loop's error if a blocking query fails (the caller
// then re-reads, as after any early return).
func (s *Store) WaitChange(ctx context.Context, key string, last store.Version) error {
	if err := s.check(ctx, "watch", key, false); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	full := s.prefix + key
	p, meta, err := s.get(ctx, full, &api.QueryOptions{})
	if err != nil {
		return s.watchError(ctx, key, err)
	}
	if versionOf(p) != last {
		return nil
	}
	h, sub := joinHub(s, full, last, meta.LastIndex)
	defer h.leave(sub)
	select {
	case err := <-sub.done:
		if err != nil {
			return s.watchError(ctx, key, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closeCtx.Done():
		return store.NewOpError(backend, "watch", key, store.ErrClosed, nil)
	}
}

func (s *Store) watchError(ctx context.Context, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return s.opError(ctx, "watch", key, false, err)
}

func versionOf(p *api.KVPair) store.Version {
	if p == nil {
		return ""
	}
	return version(p.ModifyIndex)
}

// hub is the one blocking-query loop on one key shared by its watchers.
// It runs while it has watchers, through the Store that started it (any
// Store of the same hubKey reaches the same cluster with the same
// credentials), each query holding one of the pool's blocking-query
// slots.
type hub struct {
	key    string // registry key
	full   string // Consul key
	s      *Store
	cancel context.CancelFunc

	mu      sync.Mutex
	subs    map[*watcher]struct{}
	from    uint64        // the index its first query waits past
	seen    bool          // a query has answered
	cur     store.Version // the key's version at its last answer
	idx     uint64        // that answer's X-Consul-Index
	stopped bool
}

// watcher is one WaitChange waiting on a hub: it is done when the hub
// sees a version other than last at an index past after.
type watcher struct {
	last  store.Version
	after uint64
	done  chan error // buffered; receives once
}

var hubs = struct {
	mu sync.Mutex
	m  map[string]*hub
}{m: map[string]*hub{}}

// joinHub registers a watcher of full with the hub of the key, starting
// one if none runs. A hub it starts waits from after, the index of the
// watcher's own read, so its first query blocks (one that started at 0
// would answer at once with what that read has just said: a request per
// watch for nothing, the third of three). If the hub already answered
// past after with a version other than last, the watcher is done at
// once; so it is when the hub has not answered yet and waits from an
// index past after (a read that a stale server answered late): a change
// between after and that index would never wake it, so it returns early
// and its caller re-reads.
func joinHub(s *Store, full string, last store.Version, after uint64) (*hub, *watcher) {
	w := &watcher{last: last, after: after, done: make(chan error, 1)}
	k := s.hubKey + "|" + full
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	h := hubs.m[k]
	if h == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h = &hub{key: k, full: full, s: s, cancel: cancel, subs: map[*watcher]struct{}{}, from: after}
		hubs.m[k] = h
		go h.run(ctx)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen && h.idx > after && h.cur != last || !h.seen && h.from > after {
		w.done <- nil
	}
	h.subs[w] = struct{}{}
	return h, w
}

// leave unregisters w; the last watcher to leave stops the hub (and its
// query in flight).
func (h *hub) leave(w *watcher) {
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, w)
	if len(h.subs) == 0 && !h.stopped {
		h.stopped = true
		delete(hubs.m, h.key)
		h.cancel()
	}
}

// run is the blocking-query loop: Consul's rules (an index that goes
// backwards resets the wait to 0; loops that come back at once without a
// change are rate-limited) and one pool slot per query.
func (h *hub) run(ctx context.Context) {
	idx := h.from
	idle := 0 // blocking queries in a row that came back at once unchanged
	for ctx.Err() == nil {
		start := time.Now()
		p, meta, err := h.query(ctx, idx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.publish(err, "", 0, false)
			// The watchers are done; wait a little before a next query
			// for those who come back, whose own reads also tell them.
			idx = 0
			_ = backoff.Sleep(ctx, watchBackoff.EqualDelay(1))
			continue
		}
		backwards := meta.LastIndex < idx
		h.publish(nil, versionOf(p), meta.LastIndex, backwards)
		if backwards {
			idx = 0
		} else {
			idx = meta.LastIndex
		}
		// A server that answers blocking queries at once without a
		// change (one that does not block, or writes to neighbouring keys
		// waking a missing key's query) would otherwise be asked as fast
		// as it answers.
		if time.Since(start) >= watchQuick {
			idle = 0
			continue
		}
		if idle++; idle > watchFreeQuick {
			_ = backoff.Sleep(ctx, watchBackoff.EqualDelay(idle-watchFreeQuick))
		}
	}
}

// query runs one blocking query holding a slot of the first address's
// pool. When every slot is taken, the query waits at most
// watchContendedWait, so that the keys queued for a slot get their turn.
func (h *hub) query(ctx context.Context, idx uint64) (*api.KVPair, *api.QueryMeta, error) {
	slots := h.s.eps.list[0].pool.slots
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-slots }()
	wait := h.s.opts.WaitTime
	if len(slots) == cap(slots) {
		wait = min(wait, watchContendedWait)
	}
	return h.s.get(ctx, h.full, &api.QueryOptions{WaitIndex: idx, WaitTime: wait})
}

// publish hands one answer (or the loop's error) to the watchers it ends.
func (h *hub) publish(err error, cur store.Version, idx uint64, backwards bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.seen, h.cur, h.idx = true, cur, idx
	}
	for w := range h.subs {
		if err != nil || backwards || (idx > w.after && cur != w.last) {
			select {
			case w.done <- err:
			default:
			}
		}
	}
}

// The watch loop's rate limit: after watchFreeQuick blocking queries in a
// row that returned within watchQuick without a change, each next one
// waits watchBackoff.EqualDelay(n) first for the n-th such repeat: 50ms
// doubling up to 1s, each drawn over its upper half (equal jitter).
// watchContendedWait is the wait of a blocking query started when every
// blocking-query slot of its address is taken.
const (
	watchQuick         = 50 * time.Millisecond
	watchFreeQuick     = 3
	watchMaxDelay      = time.Second
	watchContendedWait = 10 * time.Second
)

var watchBackoff = backoff.Policy{Base: watchQuick, Max: watchMaxDelay}
