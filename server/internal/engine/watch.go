package engine

import (
	"context"
	"strings"
	"sync"
)

// ringSize is how many recent commits the watch registry remembers, so a
// Wait that starts after the commit it asks about still sees it. A Wait
// whose index is older than the ring returns at once (callers re-check).
const ringSize = 4096

// Watch keys live in two spaces that never match each other: record keys
// (PutRecord, DeleteRecord), watched with Wait, and the names layers Touch
// for their own records (S3 buckets and objects, sessions, uploads),
// watched with WaitTouched. So a waiter on the whole record root (prefix "") is not
// woken by an S3 PUT or a session renewal, whatever the name's spelling.
// The registry stores every key and prefix with its space's letter first.
const (
	kvSpace    = "k"
	touchSpace = "t"
)

type commitRec struct {
	index uint64
	keys  []string
}

type waiter struct {
	prefix string
	after  uint64
	ch     chan struct{} // closed on wake
}

// watchers is the registry of Wait callers, keyed by prefix, so a commit
// looks up only the prefixes of the keys it touched.
type watchers struct {
	mu      sync.Mutex
	closed  bool
	base    uint64 // the ring holds every touching commit with index > base
	ring    []commitRec
	head    int
	byPfx   map[string]map[*waiter]struct{}
	lengths map[int]int // prefix length → number of waiters with it
}

func (w *watchers) init() {
	w.byPfx = make(map[string]map[*waiter]struct{})
	w.lengths = make(map[int]int)
	w.ring = make([]commitRec, 0, ringSize)
}

// commit records a committed index and wakes the waiters of every prefix of
// its keys.
func (w *watchers) commit(index uint64, keys []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ring) < ringSize {
		w.ring = append(w.ring, commitRec{index, keys})
	} else {
		w.base = w.ring[w.head].index
		w.ring[w.head] = commitRec{index, keys}
		w.head = (w.head + 1) % ringSize
	}
	if len(w.byPfx) == 0 {
		return
	}
	for _, k := range keys {
		for n := range w.lengths {
			if n > len(k) {
				continue
			}
			for wt := range w.byPfx[k[:n]] {
				if index > wt.after {
					w.remove(wt)
					close(wt.ch)
				}
			}
		}
	}
}

func (w *watchers) remove(wt *waiter) {
	set := w.byPfx[wt.prefix]
	if _, ok := set[wt]; !ok {
		return
	}
	delete(set, wt)
	if len(set) == 0 {
		delete(w.byPfx, wt.prefix)
	}
	if w.lengths[len(wt.prefix)]--; w.lengths[len(wt.prefix)] == 0 {
		delete(w.lengths, len(wt.prefix))
	}
}

// register returns a waiter, or nil when a remembered commit already
// satisfies it (or the ring no longer reaches back to after).
func (w *watchers) register(prefix string, after uint64) (*waiter, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if after < w.base {
		return nil, nil
	}
	for i := range len(w.ring) { // newest first; stop at the first old one
		c := w.ring[(w.head-1-i+2*len(w.ring))%len(w.ring)]
		if c.index <= after {
			break
		}
		for _, k := range c.keys {
			if strings.HasPrefix(k, prefix) {
				return nil, nil
			}
		}
	}
	wt := &waiter{prefix: prefix, after: after, ch: make(chan struct{})}
	set := w.byPfx[prefix]
	if set == nil {
		set = make(map[*waiter]struct{})
		w.byPfx[prefix] = set
	}
	set[wt] = struct{}{}
	w.lengths[len(prefix)]++
	return wt, nil
}

func (w *watchers) cancel(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.remove(wt)
}

// wakeAll wakes every waiter without closing the registry (the engine
// failed: waiters re-read and meet the failure).
func (w *watchers) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.byPfx {
		for wt := range set {
			close(wt.ch)
		}
	}
	w.byPfx = map[string]map[*waiter]struct{}{}
	w.lengths = map[int]int{}
}

func (w *watchers) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, set := range w.byPfx {
		for wt := range set {
			close(wt.ch)
		}
	}
	w.byPfx = map[string]map[*waiter]struct{}{}
	w.lengths = map[int]int{}
}

// Wait blocks until a commit with an index greater than after has written
// or deleted a record whose key starts with prefix, or ctx ends (ctx's error), or
// the engine closes (ErrClosed) or fails (its Err). Names given to
// Tx.Touch never match: wait for those with WaitTouched.
//
// Pass as after the index you last observed, typically tx.Index() of the
// View you read from: a commit that lands between that View and the call
// to Wait is not missed. Wait may return early without a matching change
// (when after is older than the recent-commit memory); callers re-check.
// A waiter is woken only by commits touching its prefix.
func (e *Engine) Wait(ctx context.Context, prefix string, after uint64) error {
	return e.wait(ctx, kvSpace+prefix, after)
}

// WaitTouched is Wait for the names given to Tx.Touch: it returns once a
// commit with an index greater than after has touched a name starting
// with prefix. Record writes never match.
func (e *Engine) WaitTouched(ctx context.Context, prefix string, after uint64) error {
	return e.wait(ctx, touchSpace+prefix, after)
}

func (e *Engine) wait(ctx context.Context, prefix string, after uint64) error {
	wt, err := e.watch.register(prefix, after)
	if err != nil || wt == nil {
		return err
	}
	if err := e.Err(); err != nil { // failed before we registered: no wake will come
		e.watch.cancel(wt)
		return err
	}
	select {
	case <-wt.ch:
		if e.isClosed() {
			return ErrClosed
		}
		return e.Err()
	case <-ctx.Done():
		e.watch.cancel(wt)
		return ctx.Err()
	}
}
