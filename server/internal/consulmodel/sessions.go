package consulmodel

import (
	"context"
	"sync"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Session timing constants (Consul's).
const (
	// DefaultLockDelay is a session's lock-delay when its create request
	// names none.
	DefaultLockDelay = 15 * time.Second
	maxLockDelay     = 60 * time.Second
	// MaxSessionTTL is the longest session TTL (Consul's).
	MaxSessionTTL = 24 * time.Hour
)

// sessions keeps what Consul keeps in memory on the leader: one TTL timer
// per TTL session and the lock-delay table. Both are lost on restart, as
// on a Consul leader change: timers restart at full length (TTL×2) for
// every stored session when the server starts, and lock-delays are gone.
type sessions struct {
	m *Model

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

func newSessions(m *Model) *sessions {
	return &sessions{m: m, timers: map[string]*ttlTimer{}, delays: map[string]time.Time{}}
}

// start arms a timer for every stored TTL session.
func (s *sessions) start() error {
	var all []*Session
	if err := s.m.e.View(func(tx *engine.Tx) error {
		var err error
		all, err = ListSessions(tx)
		return err
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
func (s *sessions) arm(se *Session) {
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
		err = s.m.invalidate(ctx, id)
	}
	if err != nil {
		// The session and its locks live on; so must the timer, or the
		// session would never expire.
		s.m.log.Warn("consulmodel: session TTL invalidation failed; retrying", "session", id, "retry_in", ExpiryRetry, "err", err)
		s.rearm(id)
		return
	}
	s.m.log.Debug("consulmodel: session expired", "session", id)
}

// ExpiryRetry is the pause before retrying a TTL invalidation that failed.
const ExpiryRetry = time.Second

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
	tt.t = time.AfterFunc(ExpiryRetry, func() { s.expire(id, 1) })
	tt.deadline = time.Now().Add(ExpiryRetry)
}

// setLockDelay starts the lock-delay of key: until now+d.
func (s *sessions) setLockDelay(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	d = min(d, maxLockDelay)
	now := s.m.now()
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
	if !until.After(s.m.now()) {
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
func (m *Model) invalidate(ctx context.Context, id string) error {
	_, err := m.e.Update(ctx, func(tx *engine.Tx) error {
		se, ok, err := LoadSession(tx, id)
		if err != nil || !ok {
			return err
		}
		return m.invalidateTx(tx, se)
	})
	if err != nil {
		return err // the session lives on, and so does its timer
	}
	m.sess.disarm(id)
	return nil
}

// invalidateTx is invalidate inside tx, for a session that exists; the
// caller disarms its timer once tx has committed.
func (m *Model) invalidateTx(tx *engine.Tx, se *Session) error {
	id := se.ID
	if err := deleteSession(tx, id); err != nil {
		return err
	}
	keys, _ := heldKeys(tx, id, -1)
	for _, key := range keys {
		if err := setHeld(tx, id, key, false); err != nil {
			return err
		}
		kv, ok, err := Get(tx, key)
		if err != nil {
			return err
		}
		if !ok || kv.Session != id {
			continue
		}
		if se.Behavior == BehaviorDelete {
			tx.DeleteRecord(key)
		} else {
			kv.Session = ""
			Put(tx, kv)
		}
		// Set inside the transaction so that no acquire can slip in
		// between the commit and the delay; setting it again when the
		// engine re-runs fn is harmless.
		m.sess.setLockDelay(key, time.Duration(se.LockDelay))
	}
	return nil
}

// CreateSession stores se (its ID set, its fields validated by the
// caller) if Consul's session rules allow it (its node registered, every
// check it names present and not critical: Rejected otherwise) and fewer
// than Options.MaxSessions exist (TooMany otherwise), then arms its TTL
// timer.
func (m *Model) CreateSession(ctx context.Context, se *Session) error {
	if _, err := m.e.Update(ctx, func(tx *engine.Tx) error {
		if err := m.sessionChecksOK(tx, se); err != nil {
			return err
		}
		// Counted in the write transaction, so concurrent creates cannot
		// overshoot; the walk stops at the limit.
		if n, _ := SessionCount(tx, m.opts.MaxSessions); n >= m.opts.MaxSessions {
			return errorf(TooMany, "Too many sessions (limit %d)", m.opts.MaxSessions)
		}
		return saveSession(tx, se)
	}); err != nil {
		return err
	}
	m.sess.arm(se)
	return nil
}

// DestroySession invalidates session id now (see invalidate); a missing
// session is no error.
func (m *Model) DestroySession(ctx context.Context, id string) error { return m.invalidate(ctx, id) }

// RenewSession restarts the TTL timer of session id and returns it
// (NotFound when there is none).
func (m *Model) RenewSession(id string) (*Session, error) {
	var se *Session
	if err := m.e.View(func(tx *engine.Tx) error {
		var err error
		se, _, err = LoadSession(tx, id)
		return err
	}); err != nil {
		return nil, err
	}
	if se == nil {
		return nil, errorf(NotFound, "Session id '%s' not found", id)
	}
	m.sess.arm(se)
	return se, nil
}
