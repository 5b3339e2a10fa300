package consulstore

import (
	"context"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// WaitChange implements store.Watcher with blocking queries on the key:
// each waits up to Options.WaitTime for the key's index to pass the last
// one seen, and the loop ends when the version differs from last, ctx
// ends (ctx's error) or the store is closed (ErrClosed).
func (s *Store) WaitChange(ctx context.Context, key string, last store.Version) error {
	if err := s.check(ctx, "watch", key, false); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-s.closeCtx.Done():
			stop()
		case <-wctx.Done():
		}
	}()
	var idx uint64
	idle := 0 // blocking queries in a row that came back at once unchanged
	for {
		q := (&api.QueryOptions{WaitIndex: idx, WaitTime: s.opts.WaitTime}).WithContext(wctx)
		start := time.Now()
		p, meta, err := s.kv.Get(s.prefix+key, q)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case s.isClosed():
			return store.NewOpError(backend, "watch", key, store.ErrClosed, nil)
		case err != nil:
			return s.opError(ctx, "watch", key, false, err)
		}
		cur := store.Version("")
		if p != nil {
			cur = version(p.ModifyIndex)
		}
		if cur != last {
			return nil
		}
		// Consul's rule: an index that goes backwards resets the wait.
		if meta.LastIndex < idx {
			idx = 0
		} else {
			idx = meta.LastIndex
		}
		// Consul's other rule: rate-limit the loop. A server that answers
		// blocking queries at once without a change (one that does not
		// block, or writes to neighbouring keys waking a missing key's
		// query) would otherwise be asked as fast as it answers.
		if q.WaitIndex == 0 || time.Since(start) >= watchQuick {
			idle = 0
			continue
		}
		idle++
		if idle > watchFreeQuick {
			if err := backoff.Sleep(wctx, watchBackoff.EqualDelay(idle-watchFreeQuick)); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return store.NewOpError(backend, "watch", key, store.ErrClosed, nil)
			}
		}
	}
}

// The watch loop's rate limit: after watchFreeQuick blocking queries in a
// row that returned within watchQuick without a change, each next one
// waits watchBackoff.EqualDelay(n) first for the n-th such repeat: 50ms
// doubling up to 1s, each drawn over its upper half (equal jitter).
const (
	watchQuick     = 50 * time.Millisecond
	watchFreeQuick = 3
	watchMaxDelay  = time.Second
)

var watchBackoff = backoff.Policy{Base: watchQuick, Max: watchMaxDelay}
