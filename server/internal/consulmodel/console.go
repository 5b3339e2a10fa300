package consulmodel

import (
	"encoding/json"
	"time"

	"github.com/latchkey/latchkey/internal/keyrange"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// SessionInfo is one Consul session as the web console (server/internal/console)
// shows it.
type SessionInfo struct {
	ID          string        `json:"id"`
	Name        string        `json:"name"`
	Node        string        `json:"node"`
	Behavior    string        `json:"behavior"`
	TTL         time.Duration `json:"ttl_ns"`
	LockDelay   time.Duration `json:"lock_delay_ns"`
	CreateIndex uint64        `json:"create_index"`
	ModifyIndex uint64        `json:"modify_index"`
	// Held are the keys the session holds (at most heldLimit of them);
	// HeldMore is set when there are more.
	Held     []string `json:"held"`
	HeldMore bool     `json:"held_more,omitempty"`
	// ExpiresIn is how long until a TTL session is invalidated unless
	// renewed; set by the console from Model.SessionExpiry (0: no timer).
	ExpiresIn time.Duration `json:"expires_in_ns,omitempty"`
}

// ConsoleSessions returns at most limit sessions with an id greater than
// after, in id order, each with at most heldLimit of the keys it holds,
// and whether more sessions follow. A session that cannot be decoded is
// skipped: the console shows what it can.
func ConsoleSessions(tx *engine.Tx, after string, limit, heldLimit int) (_ []SessionInfo, more bool) {
	b := tx.ReadBucket(bucketSessions)
	if b == nil {
		return nil, false
	}
	var out []SessionInfo
	c := b.Cursor()
	for k, v := c.Seek([]byte(after)); k != nil; k, v = c.Next() {
		if string(k) == after && after != "" {
			continue
		}
		if len(out) >= limit {
			return out, true
		}
		var s Session
		if json.Unmarshal(v, &s) != nil {
			continue
		}
		out = append(out, sessionInfo(tx, &s, heldLimit))
	}
	return out, false
}

// ConsoleSession returns one session, or false when there is none (or it
// cannot be decoded).
func ConsoleSession(tx *engine.Tx, id string, heldLimit int) (SessionInfo, bool) {
	s, ok, err := LoadSession(tx, id)
	if !ok || err != nil {
		return SessionInfo{}, false
	}
	return sessionInfo(tx, s, heldLimit), true
}

func sessionInfo(tx *engine.Tx, s *Session, heldLimit int) SessionInfo {
	ttl, _ := time.ParseDuration(s.TTL)
	info := SessionInfo{
		ID: s.ID, Name: s.Name, Node: s.Node, Behavior: s.Behavior,
		TTL: ttl, LockDelay: time.Duration(s.LockDelay),
		CreateIndex: s.CreateIndex, ModifyIndex: s.ModifyIndex,
	}
	info.Held, info.HeldMore = heldKeys(tx, s.ID, max(heldLimit, 0))
	return info
}

// SessionCount counts the sessions, stopping at limit (more: there are
// more).
func SessionCount(tx *engine.Tx, limit int) (n int, more bool) {
	b := tx.ReadBucket(bucketSessions)
	if b == nil {
		return 0, false
	}
	return keyrange.Count(b.Cursor(), nil, limit)
}
