package consulmodel

import (
	"bytes"
	"strings"
)

// KV verbs, shared by /v1/kv (as PUT/DELETE parameters) and /v1/txn.
const (
	VerbSet            = "set"
	VerbCAS            = "cas"
	VerbLock           = "lock"
	VerbUnlock         = "unlock"
	VerbGet            = "get"
	VerbGetOrEmpty     = "get-or-empty"
	VerbGetTree        = "get-tree"
	VerbCheckIndex     = "check-index"
	VerbCheckSession   = "check-session"
	VerbCheckNotExists = "check-not-exists"
	VerbDelete         = "delete"
	VerbDeleteTree     = "delete-tree"
	VerbDeleteCAS      = "delete-cas"
)

// IsWriteVerb reports whether verb changes state (a txn with none of these
// is read-only).
func IsWriteVerb(verb string) bool {
	switch verb {
	case VerbSet, VerbCAS, VerbLock, VerbUnlock, VerbDelete, VerbDeleteTree, VerbDeleteCAS:
		return true
	}
	return false
}

// IsKeyVerb reports whether verb names one key (not a prefix).
func IsKeyVerb(verb string) bool {
	switch verb {
	case VerbSet, VerbCAS, VerbLock, VerbUnlock, VerbGet, VerbGetOrEmpty, VerbCheckIndex,
		VerbCheckSession, VerbCheckNotExists, VerbDelete, VerbDeleteCAS:
		return true
	}
	return false
}

// Op is one KV operation, from a /v1/kv request or a txn op; its fields
// are those of Consul's TxnKVOp, so /v1/txn decodes its JSON into it.
type Op struct {
	Verb    string
	Key     string
	Value   []byte
	Flags   uint64
	Index   uint64
	Session string
}

// apply runs op inside tx and returns the entries it reports: write verbs
// the entry without its Value, reads with it, deletes and
// check-not-exists nothing.
//
// A condition that does not hold is an *Error with Code Failed; input
// Consul refuses (missing or unknown session) is Code Rejected; any other
// error is the engine's. It never writes before deciding that the op
// applies, so a refused op leaves tx unchanged.
func (m *Model) apply(tx kvTx, op Op) ([]KV, error) {
	cur, exists, err := tx.get(op.Key)
	if err != nil {
		return nil, err
	}
	switch op.Verb {
	case VerbSet:
		return m.writeSet(tx, cur, exists, op)
	case VerbCAS:
		if Stale(op.Verb, op.Index, cur.ModifyIndex, exists) {
			return nil, failf("failed to set key %q, index is stale", op.Key)
		}
		return m.writeSet(tx, cur, exists, op)
	case VerbLock:
		return m.lock(tx, cur, exists, op)
	case VerbUnlock:
		if op.Session == "" {
			return nil, errMissingSession
		}
		if !exists || cur.Session != op.Session {
			return nil, failf("failed to unlock key %q, lock isn't held, or is held by another session", op.Key)
		}
		next := KV{Key: op.Key, Value: op.Value, Flags: op.Flags, LockIndex: cur.LockIndex}
		return m.store(tx, cur, exists, next)
	case VerbGet:
		if !exists {
			return nil, failf("key %q doesn't exist", op.Key)
		}
		return []KV{cur}, nil
	case VerbGetOrEmpty:
		if !exists { // Consul echoes the op's entry, without its value
			return []KV{{Key: op.Key, Flags: op.Flags, Session: op.Session, ModifyIndex: op.Index}}, nil
		}
		return []KV{cur}, nil
	case VerbGetTree:
		return tx.list(op.Key)
	case VerbCheckIndex:
		if !exists {
			return nil, failf("failed to check index, key %q doesn't exist", op.Key)
		}
		if cur.ModifyIndex != op.Index {
			return nil, failf("failed index check for key %q, current modify index %d != %d", op.Key, cur.ModifyIndex, op.Index)
		}
		return []KV{withoutValue(cur)}, nil
	case VerbCheckSession:
		if !exists {
			return nil, failf("failed to check session, key %q doesn't exist", op.Key)
		}
		if cur.Session != op.Session {
			return nil, failf("failed session check for key %q, current session %q != %q", op.Key, cur.Session, op.Session)
		}
		return []KV{withoutValue(cur)}, nil
	case VerbCheckNotExists:
		if exists {
			return nil, failf("key %q exists", op.Key)
		}
		return nil, nil
	case VerbDelete:
		if exists {
			return nil, remove(tx, cur)
		}
		return nil, nil
	case VerbDeleteCAS:
		if !exists {
			return nil, nil // Consul: a missing key satisfies delete-cas
		}
		if Stale(op.Verb, op.Index, cur.ModifyIndex, exists) {
			return nil, failf("failed to delete key %q, index is stale", op.Key)
		}
		return nil, remove(tx, cur)
	case VerbDeleteTree:
		kvs, err := tx.list(op.Key)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			if err := remove(tx, kv); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	return nil, failf("unknown KV verb %q", op.Verb)
}

// withoutValue is what write results of /v1/txn show: the entry, Value
// null.
func withoutValue(kv KV) KV {
	kv.Value = nil
	return kv
}

// Stale is the condition of cas and delete-cas, the one place it is
// decided: whether a key whose current ModifyIndex is modify (exists
// false: no key) fails a request for index want. cas 0 wants no key, cas
// N a key at N; delete-cas N wants a key at N, or none (Consul: a missing
// key satisfies it). Other verbs never fail it.
func Stale(verb string, want, modify uint64, exists bool) bool {
	switch verb {
	case VerbCAS:
		if want == 0 {
			return exists
		}
		return !exists || modify != want
	case VerbDeleteCAS:
		return exists && modify != want
	}
	return false
}

// writeSet is set and cas: Value and Flags from the request, LockIndex
// reset to 0, Session kept (locks are advisory), CreateIndex kept.
func (m *Model) writeSet(tx kvTx, cur KV, exists bool, op Op) ([]KV, error) {
	next := KV{Key: op.Key, Value: op.Value, Flags: op.Flags}
	if exists {
		next.Session = cur.Session
	}
	return m.store(tx, cur, exists, next)
}

// lock is acquire: lock-delay and session checks, then LockIndex 1 for a
// new key, +1 when taking an unlocked key, unchanged on re-acquire.
func (m *Model) lock(tx kvTx, cur KV, exists bool, op Op) ([]KV, error) {
	// Consul checks the lock-delay before applying (kvsPreApply), so a
	// delayed key refuses even an acquire without a session.
	if m.sess.lockDelayed(op.Key) {
		return nil, failf("failed to lock key %q due to lock delay", op.Key)
	}
	if op.Session == "" {
		return nil, errMissingSession
	}
	switch ok, err := tx.sessionExists(op.Session); {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errorf(Rejected, "invalid session %q", op.Session)
	}
	next := KV{Key: op.Key, Value: op.Value, Flags: op.Flags, Session: op.Session, LockIndex: 1}
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
	return m.store(tx, cur, exists, next)
}

// store writes next, keeping the session→keys index in step with the
// key's holder, and reports the entry without its value.
//
// As Consul (since 1.7, state store kvsSetTxn) does, a write identical to
// the stored entry is skipped: no new ModifyIndex, no watcher woken, still
// true, and the answer carries the stored entry's indexes. That covers
// set, cas (once its index matched) and a holder's re-acquire; a release
// clears Session and a set after an acquire resets LockIndex, so those
// always write. Options.BumpIdenticalWrites writes anyway.
func (m *Model) store(tx kvTx, cur KV, exists bool, next KV) ([]KV, error) {
	if len(next.Value) == 0 {
		next.Value = nil
	}
	if !m.opts.BumpIdenticalWrites && exists && identical(cur, next) {
		return []KV{withoutValue(cur)}, nil
	}
	old := ""
	if exists {
		old = cur.Session
	}
	if old != next.Session {
		if old != "" {
			if err := tx.setHeld(old, next.Key, false); err != nil {
				return nil, err
			}
		}
		if next.Session != "" {
			if err := tx.setHeld(next.Session, next.Key, true); err != nil {
				return nil, err
			}
		}
	}
	stored, err := tx.put(next)
	return []KV{withoutValue(stored)}, err
}

// identical is Consul's DirEntry.Equal: the fields a write sets.
func identical(a, b KV) bool {
	return a.Key == b.Key && a.LockIndex == b.LockIndex && a.Flags == b.Flags &&
		a.Session == b.Session && bytes.Equal(a.Value, b.Value)
}

// remove deletes kv (a tombstone moves its prefixes' index forward).
func remove(tx kvTx, kv KV) error {
	if kv.Session != "" {
		if err := tx.setHeld(kv.Session, kv.Key, false); err != nil {
			return err
		}
	}
	_, err := tx.del(kv.Key)
	return err
}

// RollUp applies ?keys&separator: each key is cut after the first
// separator that follows prefix, and duplicates are dropped. keys are
// sorted, so equal roll-ups are adjacent.
func RollUp(keys []string, prefix, sep string) []string {
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
