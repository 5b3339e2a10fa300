package consulapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Sessions live in raw engine buckets, written in the same transactions as
// the keys they hold:
//
//	consul/sessions   id → JSON sessionEntry
//	consul/held       id "\x00" key → "" (the keys a session holds)
//	consul/meta       "sessions-index" → the last index that changed a session
//
// Session changes Touch sessionWatchPrefix+id so that blocking session
// reads wake.
const (
	bucketSessions     = "consul/sessions"
	bucketHeld         = "consul/held"
	bucketMeta         = "consul/meta"
	sessionWatchPrefix = "\x00consul/session/"
)

var keySessionsIndex = []byte("sessions-index")

func loadSession(tx *engine.Tx, id string) (*sessionEntry, bool) {
	b := tx.ReadBucket(bucketSessions)
	if b == nil || id == "" {
		return nil, false
	}
	v := b.Get([]byte(id))
	if v == nil {
		return nil, false
	}
	var s sessionEntry
	if err := json.Unmarshal(v, &s); err != nil {
		panic(fmt.Sprintf("consulapi: corrupt session %q: %v", id, err))
	}
	return &s, true
}

// listSessions returns every session, in id order.
func listSessions(tx *engine.Tx) []*sessionEntry {
	b := tx.ReadBucket(bucketSessions)
	if b == nil {
		return nil
	}
	var out []*sessionEntry
	b.ForEach(func(k, v []byte) error {
		var s sessionEntry
		if err := json.Unmarshal(v, &s); err != nil {
			panic(fmt.Sprintf("consulapi: corrupt session %q: %v", k, err))
		}
		out = append(out, &s)
		return nil
	})
	return out
}

// saveSession stores s (CreateIndex and ModifyIndex set to tx.Index()).
func saveSession(tx *engine.Tx, s *sessionEntry) {
	s.CreateIndex, s.ModifyIndex = tx.Index(), tx.Index()
	buf, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	mustBolt(tx.Bucket(bucketSessions).Put([]byte(s.ID), buf))
	sessionChanged(tx, s.ID)
}

func deleteSession(tx *engine.Tx, id string) {
	mustBolt(tx.Bucket(bucketSessions).Delete([]byte(id)))
	sessionChanged(tx, id)
}

func sessionChanged(tx *engine.Tx, id string) {
	mustBolt(tx.Bucket(bucketMeta).Put(keySessionsIndex, binary.BigEndian.AppendUint64(nil, tx.Index())))
	tx.Touch(sessionWatchPrefix + id)
}

// sessionsIndex is the X-Consul-Index of session reads: the last index that
// created or destroyed a session, at least 1.
func sessionsIndex(tx *engine.Tx) uint64 {
	if b := tx.ReadBucket(bucketMeta); b != nil {
		if v := b.Get(keySessionsIndex); len(v) == 8 {
			return max(binary.BigEndian.Uint64(v), 1)
		}
	}
	return 1
}

func heldKey(id, key string) []byte { return []byte(id + "\x00" + key) }

func indexHeld(tx *engine.Tx, id, key string) {
	mustBolt(tx.Bucket(bucketHeld).Put(heldKey(id, key), []byte{}))
}

func unindexHeld(tx *engine.Tx, id, key string) {
	mustBolt(tx.Bucket(bucketHeld).Delete(heldKey(id, key)))
}

// heldKeys returns the keys indexed as held by session id.
func heldKeys(tx *engine.Tx, id string) []string {
	b := tx.ReadBucket(bucketHeld)
	if b == nil {
		return nil
	}
	p := []byte(id + "\x00")
	var out []string
	c := b.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		out = append(out, string(k[len(p):]))
	}
	return out
}

// mustBolt panics on a bbolt error; engine.Update recovers the panic, rolls
// the transaction back and returns it as an error.
func mustBolt(err error) {
	if err != nil {
		panic(fmt.Errorf("consulapi: bbolt: %w", err))
	}
}
