package filestore

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// safetyFactor: with inotify, WaitChange still re-reads the key every
// safetyFactor poll intervals, in case an event was somehow missed.
const safetyFactor = 10

// WaitChange implements store.Watcher. It returns nil when the key's
// version is no longer last (the zero Version standing for "absent"),
// ctx's error when ctx ends first, and an error matching store.ErrClosed
// once the store is closed.
//
// On Linux it waits on inotify(7) events of the key's bucket directory, so
// a write by any process wakes it at once (Capabilities.Watch is true).
// The Store makes its inotify instance on the first WaitChange, so stores
// that never wait use none of the user's limited instances. Elsewhere
// (Capabilities.Watch is false), or while the user has no inotify
// instance left, it polls: it reads the key's version every PollInterval
// (jittered by ±50%), and wakes at once for writes made through this
// Store.
func (s *Store) WaitChange(ctx context.Context, key string, last store.Version) error {
	const op = "watch"
	if err := store.ValidateKey(key); err != nil {
		return store.NewOpError(backend, op, key, store.ErrInvalidKey, err)
	}
	for {
		changed := s.changes()
		bucket := s.watchBucket(key) // before the read: no event is lost
		cur, err := s.peekVersion(ctx, key)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			return err
		}
		if cur != last {
			return nil
		}
		period := s.poll
		if bucket != nil {
			period *= safetyFactor
		}
		t := time.NewTimer(backoff.Jitter(period))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-bucket:
		case <-t.C:
		}
		t.Stop()
	}
}

// watchBucket returns the inotify wakeup channel of key's bucket, or nil
// when WaitChange must poll.
func (s *Store) watchBucket(key string) <-chan struct{} {
	n := s.notifier()
	if n == nil || s.ensureBucket(key) != nil {
		return nil
	}
	ch, err := n.watch(bucketOf(key), filepath.Join(s.dir, dataDir, bucketOf(key)))
	if err != nil {
		return nil
	}
	return ch
}

// peekVersion returns key's version, or "" when it does not exist.
func (s *Store) peekVersion(ctx context.Context, key string) (store.Version, error) {
	f, h, err := s.openLocked(ctx, "watch", key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	f.Close()
	return formatVersionString(h.version), nil
}

// notifier returns the Store's inotify instance, making it on first use
// (and trying again later if none is available now).
func (s *Store) notifier() *notifier {
	if !inotifySupported {
		return nil
	}
	s.inotifyMu.Lock()
	defer s.inotifyMu.Unlock()
	s.mu.RLock() // read under inotifyMu: Close sets closed, then takes inotifyMu
	closed := s.closed
	s.mu.RUnlock()
	if s.inotify == nil && !closed {
		s.inotify = newNotifier()
	}
	return s.inotify
}
