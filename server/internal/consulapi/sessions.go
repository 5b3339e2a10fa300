package consulapi

import (
	"context"
	"sync"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Session timing constants (Consul's).
const (
	defaultLockDelay = 15 * time.Second
	maxLockDelay     = 60 * time.Second
	maxSessionTTL    = 24 * time.Hour
)

// sessions keeps what Consul keeps in memory on the leader: one TTL timer
// per TTL session and the lock-delay table. Both are lost on restart, as
// on a Consul leader change: timers restart at full length (TTL×2) for
// every stored session when the server starts, and lock-delays are gone.
type sessions struct {
	h *Handler

	mu     sync.Mutex
	closed bool
	timers map[string]*ttlTimer
	delays map[string]time.Time // key → end of its lock-delay
	wg     sync.WaitGroup       // running invalidations

	// failExpiry, set only by tests before any session exists, makes a
	// TTL invalidation report failure (before it is tried: the session is
	// untouched).
	failExpiry func(id string) error
}

type ttlTimer struct {
	t        *time.Timer
	gen      uint64
	deadline time.Time // when t fires
}

func newSessions(h *Handler) *sessions {
	return &sessions{h: h, timers: map[string]*ttlTimer{}, delays: map[string]time.Time{}}
}

// start arms a timer for every stored TTL session.
func (s *sessions) start() error {
	var all []*sessionEntry
	if err := s.h.e.View(func(tx *engine.Tx) error {
		all = listSessions(tx)
		return nil
	}); err != nil {
		return err
	}
	for _, se := range all {
		s.arm(se)
	}
	return nil
}

// arm (re)starts the TTL timer of se: invalidation at TTL×2 from now, as
// Consul does on create, renew and leader change. Sessions without a TTL
// have no timer.
func (s *sessions) arm(se *sessionEntry) {
	ttl, _ := time.ParseDuration(se.TTL)
	if ttl <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	tt := s.timers[se.ID]
	if tt == nil {
		tt = &ttlTimer{}
		s.timers[se.ID] = tt
	} else if tt.t != nil {
		tt.t.Stop()
	}
	tt.gen++
	gen, id := tt.gen, se.ID
	tt.t = time.AfterFunc(2*ttl, func() { s.expire(id, gen) })
	tt.deadline = time.Now().Add(2 * ttl)
}

// disarm stops the timer of id.
func (s *sessions) disarm(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tt := s.timers[id]; tt != nil {
		tt.t.Stop()
		delete(s.timers, id)
	}
}

// expire runs when a TTL timer fires. A timer that was reset or stopped
// after firing (gen moved on) does nothing.
func (s *sessions) expire(id string, gen uint64) {
	s.mu.Lock()
	tt := s.timers[id]
	if s.closed || tt == nil || tt.gen != gen {
		s.mu.Unlock()
		return
	}
	delete(s.timers, id)
	s.wg.Add(1)
	fail := s.failExpiry
	s.mu.Unlock()
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if fail != nil {
		err = fail(id) // test hook: a commit that failed
	}
	if err == nil {
		err = s.h.invalidate(ctx, id)
	}
	if err != nil {
		// The session and its locks live on; so must the timer, or the
		// session would never expire.
		s.h.log.Warn("consulapi: session TTL invalidation failed; retrying", "session", id, "retry_in", expiryRetry, "err", err)
		s.rearm(id)
		return
	}
	s.h.log.Debug("consulapi: session expired", "session", id)
}

// expiryRetry is the pause before retrying a TTL invalidation that failed.
const expiryRetry = time.Second

// rearm schedules another expiry of id after a failed one, unless a renew
// armed a fresh timer meanwhile or the handler is closing.
func (s *sessions) rearm(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.timers[id] != nil {
		return
	}
	tt := &ttlTimer{gen: 1}
	s.timers[id] = tt
	tt.t = time.AfterFunc(expiryRetry, func() { s.expire(id, 1) })
	tt.deadline = time.Now().Add(expiryRetry)
}

// setLockDelay starts the lock-delay of key: until now+d.
func (s *sessions) setLockDelay(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	d = min(d, maxLockDelay)
	now := s.h.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.delays) >= 1024 {
		for k, until := range s.delays {
			if !until.After(now) {
				delete(s.delays, k)
			}
		}
	}
	s.delays[key] = now.Add(d)
}

// lockDelayed reports whether key is within a lock-delay.
func (s *sessions) lockDelayed(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.delays[key]
	if !ok {
		return false
	}
	if !until.After(s.h.now()) {
		delete(s.delays, key)
		return false
	}
	return true
}

// close stops every timer and waits for running invalidations.
func (s *sessions) close() {
	s.mu.Lock()
	s.closed = true
	for id, tt := range s.timers {
		tt.t.Stop()
		delete(s.timers, id)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// invalidate destroys session id: in one transaction it deletes the
// session and releases (Behavior release) or deletes (Behavior delete)
// every key the session holds, each write bumping the key's ModifyIndex;
// then each such key gets the session's lock-delay (capped at 60s).
// Invalidating a missing session does nothing.
func (h *Handler) invalidate(ctx context.Context, id string) error {
	_, err := h.e.Update(ctx, func(tx *engine.Tx) error {
		if se, ok := loadSession(tx, id); ok {
			h.invalidateTx(tx, se)
		}
		return nil
	})
	if err != nil {
		return err // the session lives on, and so does its timer
	}
	h.sess.disarm(id)
	return nil
}

// invalidateTx is invalidate inside tx, for a session that exists; the
// caller disarms its timer once tx has committed.
func (h *Handler) invalidateTx(tx *engine.Tx, se *sessionEntry) {
	id := se.ID
	deleteSession(tx, id)
	for _, key := range heldKeys(tx, id) {
		unindexHeld(tx, id, key)
		kv, ok := tx.GetKV(key)
		if !ok || kv.Session != id {
			continue
		}
		if se.Behavior == behaviorDelete {
			tx.DeleteKV(key)
		} else {
			kv.Session = ""
			tx.PutKV(kv)
		}
		// Set inside the transaction so that no acquire can slip in
		// between the commit and the delay; setting it again when the
		// engine re-runs fn is harmless.
		h.sess.setLockDelay(key, time.Duration(se.LockDelay))
	}
}
