package consulapi

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// KV verbs, shared by /v1/kv (as PUT/DELETE parameters) and /v1/txn.
const (
	verbSet            = "set"
	verbCAS            = "cas"
	verbLock           = "lock"
	verbUnlock         = "unlock"
	verbGet            = "get"
	verbGetOrEmpty     = "get-or-empty"
	verbGetTree        = "get-tree"
	verbCheckIndex     = "check-index"
	verbCheckSession   = "check-session"
	verbCheckNotExists = "check-not-exists"
	verbDelete         = "delete"
	verbDeleteTree     = "delete-tree"
	verbDeleteCAS      = "delete-cas"
)

// isWriteVerb reports whether verb changes state (a txn with none of these
// is read-only).
func isWriteVerb(verb string) bool {
	switch verb {
	case verbSet, verbCAS, verbLock, verbUnlock, verbDelete, verbDeleteTree, verbDeleteCAS:
		return true
	}
	return false
}

// isKeyVerb reports whether verb names one key (not a prefix).
func isKeyVerb(verb string) bool {
	switch verb {
	case verbSet, verbCAS, verbLock, verbUnlock, verbGet, verbGetOrEmpty, verbCheckIndex,
		verbCheckSession, verbCheckNotExists, verbDelete, verbDeleteCAS:
		return true
	}
	return false
}

// kvOp is one KV operation, from a /v1/kv request or a txn op.
type kvOp struct {
	Verb    string
	Key     string
	Value   []byte
	Flags   uint64
	Index   uint64
	Session string
}

// opFailure is an op that did not apply: a CAS on a stale index, a lock
// held by another session… KV endpoints answer it with 200 false; txns
// with a 409 Errors entry carrying What.
type opFailure struct{ what string }

func (f *opFailure) Error() string { return f.what }

func failf(format string, args ...any) error { return &opFailure{what: fmt.Sprintf(format, args...)} }

// toDir converts an engine record into the wire entry.
func toDir(kv engine.KV) *dirEntry {
	return &dirEntry{
		LockIndex:   kv.LockIndex,
		Key:         kv.Key,
		Flags:       kv.Flags,
		Value:       normValue(kv.Value),
		Session:     kv.Session,
		CreateIndex: kv.CreateIndex,
		ModifyIndex: kv.ModifyIndex,
	}
}

// applyOp runs op inside tx and returns the entries it reports (write
// verbs report the entry without its value, reads with it, deletes and
// check-not-exists nothing).
//
// It returns an *opFailure when the op's condition does not hold, and
// another error for invalid input that Consul answers with 500 on the KV
// endpoint (missing or invalid session). It never writes before deciding
// that the op applies, so a failing op leaves tx unchanged.
func (h *Handler) applyOp(tx kvTx, op kvOp) ([]*dirEntry, error) {
	cur, exists := tx.GetKV(op.Key)
	switch op.Verb {
	case verbSet:
		return h.writeSet(tx, cur, exists, op), nil
	case verbCAS:
		if staleIndex(op.Verb, op.Index, cur.ModifyIndex, exists) {
			return nil, failf("failed to set key %q, index is stale", op.Key)
		}
		return h.writeSet(tx, cur, exists, op), nil
	case verbLock:
		return h.lock(tx, cur, exists, op)
	case verbUnlock:
		if op.Session == "" {
			return nil, errMissingSession
		}
		if !exists || cur.Session != op.Session {
			return nil, failf("failed to unlock key %q, lock isn't held, or is held by another session", op.Key)
		}
		next := engine.KV{Key: op.Key, Value: op.Value, Flags: op.Flags, LockIndex: cur.LockIndex}
		return []*dirEntry{h.store(tx, cur, exists, next).withoutValue()}, nil
	case verbGet:
		if !exists {
			return nil, failf("key %q doesn't exist", op.Key)
		}
		return []*dirEntry{toDir(cur)}, nil
	case verbGetOrEmpty:
		if !exists { // Consul echoes the op's entry, without its value
			return []*dirEntry{{Key: op.Key, Flags: op.Flags, Session: op.Session, ModifyIndex: op.Index}}, nil
		}
		return []*dirEntry{toDir(cur)}, nil
	case verbGetTree:
		var out []*dirEntry
		for _, kv := range tx.ListKV(op.Key, "", 0) {
			out = append(out, toDir(kv))
		}
		return out, nil
	case verbCheckIndex:
		if !exists {
			return nil, failf("failed to check index, key %q doesn't exist", op.Key)
		}
		if cur.ModifyIndex != op.Index {
			return nil, failf("failed index check for key %q, current modify index %d != %d", op.Key, cur.ModifyIndex, op.Index)
		}
		return []*dirEntry{toDir(cur).withoutValue()}, nil
	case verbCheckSession:
		if !exists {
			return nil, failf("failed to check session, key %q doesn't exist", op.Key)
		}
		if cur.Session != op.Session {
			return nil, failf("failed session check for key %q, current session %q != %q", op.Key, cur.Session, op.Session)
		}
		return []*dirEntry{toDir(cur).withoutValue()}, nil
	case verbCheckNotExists:
		if exists {
			return nil, failf("key %q exists", op.Key)
		}
		return nil, nil
	case verbDelete:
		if exists {
			h.remove(tx, cur)
		}
		return nil, nil
	case verbDeleteCAS:
		if !exists {
			return nil, nil // Consul: a missing key satisfies delete-cas
		}
		if staleIndex(op.Verb, op.Index, cur.ModifyIndex, exists) {
			return nil, failf("failed to delete key %q, index is stale", op.Key)
		}
		h.remove(tx, cur)
		return nil, nil
	case verbDeleteTree:
		for _, kv := range tx.ListKV(op.Key, "", 0) {
			h.remove(tx, kv)
		}
		return nil, nil
	}
	return nil, failf("unknown KV verb %q", op.Verb)
}

var errMissingSession = serverError("missing session")

// staleIndex is the condition of cas and delete-cas, the one place it is
// decided: whether a key whose current ModifyIndex is modify (exists
// false: no key) fails a request for index want. cas 0 wants no key, cas
// N a key at N; delete-cas N wants a key at N, or none (Consul: a missing
// key satisfies it). Other verbs never fail it.
func staleIndex(verb string, want, modify uint64, exists bool) bool {
	switch verb {
	case verbCAS:
		if want == 0 {
			return exists
		}
		return !exists || modify != want
	case verbDeleteCAS:
		return exists && modify != want
	}
	return false
}

// writeSet is set and cas: Value and Flags from the request, LockIndex
// reset to 0, Session kept (locks are advisory), CreateIndex kept.
func (h *Handler) writeSet(tx kvTx, cur engine.KV, exists bool, op kvOp) []*dirEntry {
	next := engine.KV{Key: op.Key, Value: op.Value, Flags: op.Flags}
	if exists {
		next.Session = cur.Session
	}
	return []*dirEntry{h.store(tx, cur, exists, next).withoutValue()}
}

// lock is acquire: lock-delay and session checks, then LockIndex 1 for a
// new key, +1 when taking an unlocked key, unchanged on re-acquire.
func (h *Handler) lock(tx kvTx, cur engine.KV, exists bool, op kvOp) ([]*dirEntry, error) {
	// Consul checks the lock-delay before applying (kvsPreApply), so a
	// delayed key refuses even an acquire without a session.
	if h.sess.lockDelayed(op.Key) {
		return nil, failf("failed to lock key %q due to lock delay", op.Key)
	}
	if op.Session == "" {
		return nil, errMissingSession
	}
	if !tx.sessionExists(op.Session) {
		return nil, serverError("invalid session %q", op.Session)
	}
	next := engine.KV{Key: op.Key, Value: op.Value, Flags: op.Flags, Session: op.Session, LockIndex: 1}
	if exists {
		switch cur.Session {
		case op.Session:
			next.LockIndex = cur.LockIndex
		case "":
			next.LockIndex = cur.LockIndex + 1
		default:
			return nil, failf("failed to lock key %q, lock is already held", op.Key)
		}
	}
	return []*dirEntry{h.store(tx, cur, exists, next).withoutValue()}, nil
}

// store writes next, keeping the session→keys index in step with the
// key's holder.
//
// As Consul (since 1.7, state store kvsSetTxn) does, a write identical to
// the stored entry is skipped: no new ModifyIndex, no watcher woken, still
// true, and the answer carries the stored entry's indexes. That covers
// set, cas (once its index matched) and a holder's re-acquire; a release
// clears Session and a set after an acquire resets LockIndex, so those
// always write. Options.BumpIdenticalWrites writes anyway.
func (h *Handler) store(tx kvTx, cur engine.KV, exists bool, next engine.KV) *dirEntry {
	next.Value = normValue(next.Value)
	if !h.opts.BumpIdenticalWrites && exists && identical(cur, next) {
		return toDir(cur)
	}
	old := ""
	if exists {
		old = cur.Session
	}
	if old != next.Session {
		if old != "" {
			tx.setHeld(old, next.Key, false)
		}
		if next.Session != "" {
			tx.setHeld(next.Session, next.Key, true)
		}
	}
	return toDir(tx.PutKV(next))
}

// identical is Consul's DirEntry.Equal: the fields a write sets.
func identical(a, b engine.KV) bool {
	return a.Key == b.Key && a.LockIndex == b.LockIndex && a.Flags == b.Flags &&
		a.Session == b.Session && bytes.Equal(a.Value, b.Value)
}

// remove deletes kv (a tombstone moves its prefixes' index forward).
func (h *Handler) remove(tx kvTx, kv engine.KV) {
	if kv.Session != "" {
		tx.setHeld(kv.Session, kv.Key, false)
	}
	tx.DeleteKV(kv.Key)
}

// rollUp applies ?keys&separator: each key is cut after the first
// separator that follows prefix, and duplicates are dropped. keys are
// sorted, so equal roll-ups are adjacent.
func rollUp(keys []string, prefix, sep string) []string {
	if sep == "" {
		return keys
	}
	out := keys[:0:0]
	for _, k := range keys {
		rest := k[len(prefix):]
		if i := strings.Index(rest, sep); i >= 0 {
			k = prefix + rest[:i+len(sep)]
		}
		if n := len(out); n > 0 && out[n-1] == k {
			continue
		}
		out = append(out, k)
	}
	return out
}
