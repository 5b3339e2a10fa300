package s3api

import (
	"context"
	"sync"

	"github.com/latchkey/latchkey/internal/engine"
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

// beginConditional registers a conditional write on the request's key; the
// returned func ends it, tidying a record kept for it. Unconditional writes
// never answer 409 and need no registration.
func (h *Handler) beginConditional(q *request, cond writeCond) func() {
	if !cond.conditional() {
		return func() {}
	}
	k := q.bucket + "/" + q.key
	h.inflight.enter(k)
	return func() {
		if !h.inflight.leave(k) {
			return
		}
		_, err := h.e.Update(context.WithoutCancel(q.ctx), func(tx *engine.Tx) error {
			h.store(tx).tidyMod(q.bucket, q.key)
			return nil
		})
		if err != nil {
			h.log.Warn("s3api: tidy mutation record", "bucket", q.bucket, "key", q.key, "err", err)
		}
	}
}
