package consulmodel

import (
	"encoding/binary"
	"fmt"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// KV is one Consul KV entry.
type KV struct {
	Key         string
	Value       []byte
	Flags       uint64
	CreateIndex uint64
	ModifyIndex uint64
	LockIndex   uint64
	Session     string // holder session id; "" when unlocked
}

// A KV entry is stored as one engine.Record: Flags is the record's Flags
// word, the engine keeps CreateIndex and ModifyIndex, and Data is
//
//	lock index (8 bytes, big endian), uvarint session length, session, value
//
// so the bytes on disk are flags, create, modify, lock, session, value, as
// they have been since the first release.
const lockLen = 8

func toRecord(kv KV) engine.Record {
	data := make([]byte, lockLen, lockLen+binary.MaxVarintLen64+len(kv.Session)+len(kv.Value))
	binary.BigEndian.PutUint64(data, kv.LockIndex)
	data = binary.AppendUvarint(data, uint64(len(kv.Session)))
	data = append(data, kv.Session...)
	return engine.Record{Key: kv.Key, Flags: kv.Flags, Data: append(data, kv.Value...)}
}

// fromRecord decodes r; the Value shares r.Data's memory (the engine's
// copy), and is nil when empty.
func fromRecord(r engine.Record) (KV, error) {
	kv := KV{Key: r.Key, Flags: r.Flags, CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex}
	if len(r.Data) <= lockLen {
		return KV{}, fmt.Errorf("%w %q: %d bytes of data", engine.ErrCorrupt, r.Key, len(r.Data))
	}
	kv.LockIndex = binary.BigEndian.Uint64(r.Data)
	n, w := binary.Uvarint(r.Data[lockLen:])
	if w <= 0 || uint64(len(r.Data)-lockLen-w) < n {
		return KV{}, fmt.Errorf("%w %q: bad session length", engine.ErrCorrupt, r.Key)
	}
	rest := r.Data[lockLen+w:]
	kv.Session = string(rest[:n])
	if v := rest[n:]; len(v) > 0 {
		kv.Value = v
	}
	return kv, nil
}

// Codec is the engine.Codec of Consul KV entries: the store contract's
// value is the entry's Value, and an unconditional write is Consul's plain
// set: it keeps the key's Session and resets LockIndex and Flags to 0.
type Codec struct{}

// Value implements engine.Codec.
func (Codec) Value(r engine.Record) ([]byte, error) {
	kv, err := fromRecord(r)
	return kv.Value, err
}

// Set implements engine.Codec.
func (Codec) Set(key string, cur engine.Record, exists bool, value []byte) (engine.Record, error) {
	next := KV{Key: key, Value: value}
	if exists {
		kv, err := fromRecord(cur)
		if err != nil {
			return engine.Record{}, err
		}
		next.Session = kv.Session
	}
	return toRecord(next), nil
}

// Store returns the store contract (store.Store, Transactor, Watcher) over
// e's Consul KV entries: a key written through it is read through the
// Consul API and back.
func Store(e *engine.Engine) *engine.KVStore { return e.Store(Codec{}) }
