package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/store"
)

// Record is the lease record stored at the key, as JSON. Holder and the
// wall-clock times are for people and tools only; ownership is decided by
// Nonce and Version, and expiry by the contender's own monotonic clock.
type Record struct {
	// Holder names the last writer (the holder, or who released it).
	Holder string `json:"holder"`
	// Nonce is fresh on every write; a writer that finds its own nonce
	// knows its write happened.
	Nonce string `json:"nonce"`
	// Token is the fencing token of the current (or last) holding. It goes
	// up by one on every acquisition and never goes backwards.
	Token uint64 `json:"token"`
	// TTL is the holder's TTL: how long the record must be seen unchanged
	// before a contender may take it over.
	TTL time.Duration `json:"-"`
	// Released is true once the holder (or lock release --force) released
	// the lease.
	Released bool `json:"released"`
	// Acquired is when the holding began, on the holder's wall clock.
	Acquired time.Time `json:"acquired"`
	// Renewed is when the record was last written, on the writer's wall
	// clock.
	Renewed time.Time `json:"renewed"`
}

// MarshalJSON writes the TTL as ttl_ms.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return json.Marshal(struct {
		plain
		TTLMillis int64 `json:"ttl_ms"`
	}{plain(r), r.TTL.Milliseconds()})
}

// UnmarshalJSON reads the TTL from ttl_ms.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var w struct {
		plain
		TTLMillis int64 `json:"ttl_ms"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Record(w.plain)
	r.TTL = time.Duration(w.TTLMillis) * time.Millisecond
	return nil
}

func (r Record) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a struct of strings, numbers and times always encodes
	}
	return b
}

func decodeRecord(key string, b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("lease: %q: %w: %v", key, ErrCorrupt, err)
	}
	if r.Nonce == "" || r.TTL <= 0 {
		return Record{}, fmt.Errorf("lease: %q: %w: missing nonce or ttl", key, ErrCorrupt)
	}
	return r, nil
}

// Inspect reads the lease record at key and its version. It returns an
// error matching store.ErrNotFound when there is none, and ErrCorrupt when
// the value is not a lease record.
func Inspect(ctx context.Context, s store.Store, key string) (Record, store.Version, error) {
	e, err := s.Get(ctx, key)
	if err != nil {
		return Record{}, "", fmt.Errorf("lease: inspect %q: %w", key, err)
	}
	r, err := decodeRecord(key, e.Value)
	return r, e.Version, err
}

func newNonce() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
