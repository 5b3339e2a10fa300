package console

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

// Console sessions. Logging in creates a session: 32 random bytes, kept
// only in this process, that name what the login proved (Access), never
// the secret that proved it. The cookie carries the id alone. A session
// ends at its expiry (SessionTTL after login, judged on the monotonic
// clock of the time.Time values Now returns), at logout, and when the
// server stops: nothing about it is ever written to disk.

// Access is what a request may read: Consul data (the KV key space,
// sessions, publications, Consul locks, /-/metrics when there is an ACL
// token) and S3 data (buckets, objects, leases kept in buckets).
type Access struct {
	Consul, S3 bool
}

func (a Access) any() bool { return a.Consul || a.S3 }

func (a Access) or(b Access) Access { return Access{a.Consul || b.Consul, a.S3 || b.S3} }

type session struct {
	access  Access
	expires time.Time
}

// sessionStore holds the live sessions, at most max of them.
type sessionStore struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[string]session
}

func newSessionStore(ttl time.Duration, max int) *sessionStore {
	return &sessionStore{ttl: ttl, max: max, m: map[string]session{}}
}

// create starts a session with access a and returns its id. When max
// sessions are live, the expired ones are dropped and then, if none was,
// the one closest to its expiry (the oldest) ends.
func (s *sessionStore) create(a Access, now time.Time) string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		oldest := ""
		for k, v := range s.m {
			if !now.Before(v.expires) {
				delete(s.m, k)
			} else if oldest == "" || v.expires.Before(s.m[oldest].expires) {
				oldest = k
			}
		}
		if len(s.m) >= s.max {
			delete(s.m, oldest)
		}
	}
	s.m[id] = session{access: a, expires: now.Add(s.ttl)}
	return id
}

// lookup returns the access of a live session; an expired one is
// dropped.
func (s *sessionStore) lookup(id string, now time.Time) (Access, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	if !ok {
		return Access{}, false
	}
	if !now.Before(v.expires) {
		delete(s.m, id)
		return Access{}, false
	}
	return v.access, true
}

func (s *sessionStore) revoke(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
