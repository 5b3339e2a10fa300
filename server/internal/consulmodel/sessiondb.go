package consulmodel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Session is one Consul session, stored (JSON) and answered as Consul
// marshals it. LockDelay is in nanoseconds. Checks (the legacy field) is
// omitted unless it was set.
type Session struct {
	ID            string
	Name          string
	Node          string
	LockDelay     int64
	Behavior      string
	TTL           string
	Checks        []string `json:",omitempty"`
	NodeChecks    []string
	ServiceChecks []ServiceCheck
	CreateIndex   uint64
	ModifyIndex   uint64
}

// ServiceCheck is a service check a session depends on.
type ServiceCheck struct {
	ID        string
	Namespace string
}

// Session behaviours: what invalidation does to the keys a session holds.
const (
	BehaviorRelease = "release"
	BehaviorDelete  = "delete"
)

// SerfHealth is the one node check every session gets by default, and the
// check of this server's node that always passes.
const SerfHealth = "serfHealth"

// Sessions live in raw engine buckets, written in the same transactions as
// the keys they hold:
//
//	consul/sessions   id → JSON Session
//	consul/held       id "\x00" key → "" (the keys a session holds)
//	consul/meta       "sessions-index" → the last index that changed a session
//
// Session changes Touch SessionWatchPrefix+id so that blocking session
// reads wake.
const (
	bucketSessions = "consul/sessions"
	bucketHeld     = "consul/held"
	bucketMeta     = "consul/meta"
	// SessionWatchPrefix is the engine watch name (WaitTouched) of the
	// sessions; a session's own is SessionWatchPrefix + its id.
	SessionWatchPrefix = "\x00consul/session/"
)

var keySessionsIndex = []byte("sessions-index")

func decodeSession(id, v []byte) (*Session, error) {
	var s Session
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, fmt.Errorf("%w: session %q: %w", engine.ErrCorrupt, id, err)
	}
	return &s, nil
}

// LoadSession returns session id.
func LoadSession(tx *engine.Tx, id string) (*Session, bool, error) {
	b := tx.ReadBucket(bucketSessions)
	if b == nil || id == "" {
		return nil, false, nil
	}
	v := b.Get([]byte(id))
	if v == nil {
		return nil, false, nil
	}
	s, err := decodeSession([]byte(id), v)
	return s, err == nil, err
}

// ListSessions returns every session, in id order.
func ListSessions(tx *engine.Tx) ([]*Session, error) {
	b := tx.ReadBucket(bucketSessions)
	if b == nil {
		return nil, nil
	}
	var out []*Session
	err := b.ForEach(func(k, v []byte) error {
		s, err := decodeSession(k, v)
		if err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// saveSession stores s (CreateIndex and ModifyIndex set to tx.Index()).
func saveSession(tx *engine.Tx, s *Session) error {
	s.CreateIndex, s.ModifyIndex = tx.Index(), tx.Index()
	buf, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketSessions).Put([]byte(s.ID), buf); err != nil {
		return err
	}
	return sessionChanged(tx, s.ID)
}

func deleteSession(tx *engine.Tx, id string) error {
	if err := tx.Bucket(bucketSessions).Delete([]byte(id)); err != nil {
		return err
	}
	return sessionChanged(tx, id)
}

func sessionChanged(tx *engine.Tx, id string) error {
	tx.Touch(SessionWatchPrefix + id)
	return putIndex(tx, keySessionsIndex)
}

// putIndex records tx.Index() as the index of a table (sessions, the
// catalog) in consul/meta.
func putIndex(tx *engine.Tx, key []byte) error {
	return tx.Bucket(bucketMeta).Put(key, binary.BigEndian.AppendUint64(nil, tx.Index()))
}

// readIndex is the index putIndex recorded, at least 1.
func readIndex(tx *engine.Tx, key []byte) uint64 {
	if b := tx.ReadBucket(bucketMeta); b != nil {
		if v := b.Get(key); len(v) == 8 {
			return max(binary.BigEndian.Uint64(v), 1)
		}
	}
	return 1
}

// SessionsIndex is the X-Consul-Index of session reads: the last index that
// created or destroyed a session, at least 1.
func SessionsIndex(tx *engine.Tx) uint64 { return readIndex(tx, keySessionsIndex) }

func heldKey(id, key string) []byte { return []byte(id + "\x00" + key) }

// setHeld records (held) or forgets that session id holds key.
func setHeld(tx *engine.Tx, id, key string, held bool) error {
	if held {
		return tx.Bucket(bucketHeld).Put(heldKey(id, key), []byte{})
	}
	return tx.Bucket(bucketHeld).Delete(heldKey(id, key))
}

// heldKeys returns up to limit (< 0: all) of the keys indexed as held by
// session id, and whether there are more.
func heldKeys(tx *engine.Tx, id string, limit int) (keys []string, more bool) {
	b := tx.ReadBucket(bucketHeld)
	if b == nil {
		return nil, false
	}
	p := []byte(id + "\x00")
	c := b.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		if limit >= 0 && len(keys) >= limit {
			return keys, true
		}
		keys = append(keys, string(k[len(p):]))
	}
	return keys, false
}
