package etcdstore

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/latchkey/latchkey/store"
)

// maxRereads bounds how often WaitChange starts over after its watch was
// cut off (compaction, a lost leader); past it, it returns early, which
// the contract allows.
const maxRereads = 8

// WaitChange implements store.Watcher with an etcd watch. It reads the
// key (a linearizable Get, whose header revision R is the state it saw);
// if the version differs from last it returns at once, else it watches
// the key from revision R+1, so no write after the read can slip between
// the read and the watch. Any event ends the wait: every put gives a new
// version, and a delete of a key that existed at R is a change.
//
// A watch whose start revision was compacted away, or that etcd cancels
// (say, the member lost its leader), starts over with a fresh read. It
// returns ctx's error when ctx ends first and ErrClosed when the store is
// closed.
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
	for range maxRereads {
		rev, changed, err := s.changedSince(ctx, wctx, key, last)
		if err != nil || changed {
			return err
		}
		again, err := s.watchFrom(ctx, wctx, key, rev+1)
		if err != nil || !again {
			return err
		}
	}
	return nil
}

// changedSince reads key and reports whether its version differs from
// last, with the revision of the read.
func (s *Store) changedSince(ctx, wctx context.Context, key string, last store.Version) (int64, bool, error) {
	var resp *clientv3.GetResponse
	actx, err := s.call(wctx, false, func(actx context.Context) (err error) {
		resp, err = s.c.Get(actx, s.prefix+key, clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return 0, false, s.watchError(ctx, actx, key, err)
	}
	cur := store.Version("")
	if len(resp.Kvs) > 0 {
		cur = version(resp.Kvs[0].ModRevision)
	}
	return resp.Header.Revision, cur != last, nil
}

// watchFrom watches key from revision rev until an event (nil, false), a
// cut-off watch worth starting over (nil, true), or a failure.
func (s *Store) watchFrom(ctx, wctx context.Context, key string, rev int64) (bool, error) {
	// Cancelled when we return: that ends the watch on the server too.
	// WithRequireLeader makes a member that loses its leader cancel the
	// watch instead of keeping it open silently.
	sub, cancel := context.WithCancel(clientv3.WithRequireLeader(wctx))
	defer cancel()
	for resp := range s.c.Watch(sub, s.prefix+key, clientv3.WithRev(rev)) {
		switch err := resp.Err(); {
		case resp.CompactRevision != 0 || errors.Is(err, rpctypes.ErrCompacted):
			return true, nil // revisions after our read are gone: re-read
		case err != nil:
			return false, s.watchError(ctx, nil, key, err)
		case len(resp.Events) > 0:
			return false, nil
		}
		// A created or progress notification: keep waiting.
	}
	// The channel closes when wctx ends (ctx, or Close) or the client
	// closes.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if s.closed.Load() {
		return false, store.NewOpError(backend, "watch", key, store.ErrClosed, nil)
	}
	return true, nil
}

// watchError reports a failed read or watch of WaitChange: ctx's own
// error when it ended, ErrClosed after Close, else the mapped error.
func (s *Store) watchError(ctx, rctx context.Context, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return s.opError(ctx, rctx, "watch", key, false, err)
}
