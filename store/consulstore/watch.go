package consulstore

import (
	"context"

	"github.com/hashicorp/consul/api"
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
	for {
		q := (&api.QueryOptions{WaitIndex: idx, WaitTime: s.opts.WaitTime}).WithContext(wctx)
		p, meta, err := s.kv.Get(s.prefix+key, q)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case s.isClosed():
			return store.Errorf(backend, "watch", key, store.ErrClosed, nil)
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
	}
}
