package s3model

import (
	"context"
	"sync"
)

// The 409 rule (docs/wire-s3.md, "Concurrent writes") compares a key's last-mutation record (s3m) at a
// conditional write's start with the record at its commit. A key with no
// version and no upload keeps no record, so a key absent when a PUT began,
// then created and deleted while its body streamed, would look untouched.
// inflightKeys closes that hole: while a conditional PUT or Copy is in
// flight on a key, a delete keeps the key's record (with the delete's
// index) instead of dropping it, and the last in-flight writer removes it
// afterwards if nothing else needs it.
//
// In-flight requests live in this process only (the engine's data
// directory is locked against a second server), so memory suffices.

// inflightKeys counts conditional writes in flight per "bucket/key".
type inflightKeys struct {
	mu sync.Mutex
	m  map[string]*inflightKey
}

type inflightKey struct {
	n    int  // writers in flight
	kept bool // a delete kept the key's record for them
}

func (f *inflightKeys) enter(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*inflightKey{}
	}
	e := f.m[k]
	if e == nil {
		e = &inflightKey{}
		f.m[k] = e
	}
	e.n++
}

// leave reports whether the caller was the last writer in flight on k and
// a delete kept k's record meanwhile (the caller then tidies it).
func (f *inflightKeys) leave(k string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.m[k]
	if e == nil {
		return false
	}
	e.n--
	if e.n > 0 {
		return false
	}
	delete(f.m, k)
	return e.kept
}

// holds reports whether a conditional write is in flight on k, and if so
// notes that k's record was kept for it. It runs inside engine Updates.
func (f *inflightKeys) holds(k string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.m[k]
	if e == nil {
		return false
	}
	e.kept = true
	return true
}

// BeginConditional registers a conditional write (PUT, Copy) on
// bucket/key from its start (before Precheck) to its commit; the returned
// func ends it, tidying a mutation record a delete kept for it.
// Unconditional writes never answer 409 and need no registration.
func (m *Model) BeginConditional(ctx context.Context, bucket, key string) (end func()) {
	k := bucket + "/" + key
	m.inflight.enter(k)
	return func() {
		if !m.inflight.leave(k) {
			return
		}
		err := m.update(context.WithoutCancel(ctx), func(s *records) error {
			s.tidyMod(bucket, key)
			return nil
		})
		if err != nil {
			m.log.Warn("s3model: tidy mutation record", "bucket", bucket, "key", key, "err", err)
		}
	}
}
