package filestore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/latchkey/latchkey/store"
)

// WaitChange implements store.Watcher by polling, which is why
// Capabilities.Watch is false: it reads the key's version every
// PollInterval (jittered by ±50%), and wakes at once for writes made
// through this Store. It returns nil when the version is no longer last
// (the zero Version standing for "absent"), ctx's error when ctx ends
// first, and an error matching store.ErrClosed once the store is closed.
func (s *Store) WaitChange(ctx context.Context, key string, last store.Version) error {
	const op = "watch"
	if err := store.ValidateKey(key); err != nil {
		return store.Errorf(backend, op, key, store.ErrInvalidKey, err)
	}
	for {
		changed := s.changes()
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
		d := s.poll/2 + rand.N(s.poll)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
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
