package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	// Released is true once the holder released the lease through its
	// own Lease: the record may be taken over at once.
	Released bool `json:"released"`
	// Forced is true once someone other than the holder released the
	// lease (ForceRelease, ReleaseHolder, lock release). The holder may
	// not know yet, so a contender treats the record as held: it takes it
	// over only after seeing it unchanged for a full TTL, by which time
	// the holder has regarded the lease as lost.
	Forced bool `json:"forced,omitempty"`
	// Epoch counts the records created at the key, this one included; the
	// count itself is kept at EpochKey(key), which survives the deletion
	// of the record. Tokens of epoch n start at (n−1)·2³²+1, so a record
	// deleted by hand does not restart the tokens. Zero in records written
	// before epochs existed, and in pending records.
	Epoch uint64 `json:"epoch,omitempty"`
	// Pending marks a record created on a store without transactions
	// that has no token yet: its creator is between the record's
	// create-if-absent and the increment of the epoch counter, after
	// which it swaps the record, by CAS, for the first record of the new
	// epoch. It counts as held (for its TTL) like any record; whoever
	// takes it over starts a new epoch too, never Token+1. See
	// Locker.TryAcquire.
	Pending bool `json:"pending,omitempty"`
	// Acquired is when the holding began, on the holder's wall clock.
	Acquired time.Time `json:"acquired"`
	// Renewed is when the record was last written, on the writer's wall
	// clock.
	Renewed time.Time `json:"renewed"`

	created bool // the acquisition that wrote this record created it
}

// MarshalJSON writes the TTL exactly, in nanoseconds (ttl_ns), and for
// readers that know only ttl_ms also in whole milliseconds rounded up, so
// that no reader waits less than the holder's TTL.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return json.Marshal(struct {
		plain
		TTLMillis int64 `json:"ttl_ms"`
		TTLNanos  int64 `json:"ttl_ns"`
	}{plain(r), int64((r.TTL + time.Millisecond - 1) / time.Millisecond), int64(r.TTL)})
}

// UnmarshalJSON reads the TTL from ttl_ns, or from ttl_ms in records
// written before ttl_ns existed.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var w struct {
		plain
		TTLMillis int64 `json:"ttl_ms"`
		TTLNanos  int64 `json:"ttl_ns"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Record(w.plain)
	r.TTL = time.Duration(w.TTLNanos)
	if w.TTLNanos == 0 {
		r.TTL = time.Duration(w.TTLMillis) * time.Millisecond
	}
	return nil
}

func (r Record) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a struct of strings, numbers and times always encodes
	}
	return b
}

// ParseRecord decodes the lease record stored at key (b is its value), as
// written by this package or an older version of it. It returns an error
// matching ErrCorrupt when b is not a lease record. Tools that read
// records themselves (the server's console) use it, so that every reader
// agrees on what a record says.
func ParseRecord(key string, b []byte) (Record, error) { return decodeRecord(key, b) }

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
// error matching store.ErrNotFound when there is none (and also ErrDeleted
// when there was one, deleted by hand), and ErrCorrupt when the value is
// not a lease record.
func Inspect(ctx context.Context, s store.Store, key string) (Record, store.Version, error) {
	e, err := s.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		if n, _, eerr := readEpoch(ctx, s, key); eerr == nil && n > 0 {
			return Record{}, "", fmt.Errorf("lease: inspect %q: %w: %w (%d records were created there; the next holder's token continues above theirs)",
				key, err, ErrDeleted, n)
		}
	}
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
