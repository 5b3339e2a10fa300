package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
)

// epochPrefix is where the epoch counters live: outside any lock's own
// prefix, so deleting a tree of locks (kv delete of a prefix) leaves them.
const epochPrefix = ".latchkey/lease-epoch/"

// EpochKey returns the key of the counter of records created at the lease
// key: the source of the token floor that survives the deletion of the
// record. It is never deleted by the package; deleting it by hand as well
// as the record lets the tokens start again at 1.
func EpochKey(key string) string { return epochPrefix + key }

// epochValue is the counter's value. Nonce makes every write unique, so
// cas.Update can settle a write of unknown outcome by its bytes.
type epochValue struct {
	Creations uint64 `json:"creations"`
	Nonce     string `json:"nonce"`
}

// epochToken is the first token of a record of epoch n (n ≥ 1).
func epochToken(n uint64) uint64 { return (n-1)<<32 + 1 }

// readEpoch returns the number of records created at key so far and the
// counter's version (0 and "" when the counter is absent).
func readEpoch(ctx context.Context, s store.Store, key string) (uint64, store.Version, error) {
	e, err := s.Get(ctx, EpochKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	var v epochValue
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return 0, "", fmt.Errorf("lease: %q: %w: %v", EpochKey(key), ErrCorrupt, err)
	}
	return v.Creations, e.Version, nil
}

// encodeEpoch is the counter's value at n, with a fresh nonce.
func encodeEpoch(n uint64) []byte {
	b, err := json.Marshal(epochValue{Creations: n, Nonce: newNonce()})
	if err != nil {
		panic(err) // a number and a string always encode
	}
	return b
}

// bumpEpoch advances the counter of key by one, or (atLeast1) only makes
// sure it is at least 1, and returns its new value. On a store without
// transactions it runs after a pending record was created and before that
// record gets its token (see Locker.create); a bump whose record then
// loses its race only wastes an epoch.
func bumpEpoch(ctx context.Context, s store.Store, key string, atLeast1 bool) (uint64, error) {
	var n uint64
	_, err := cas.Update(ctx, s, EpochKey(key), func(cur []byte, exists bool) (cas.Decision, error) {
		var v epochValue
		if exists {
			if err := json.Unmarshal(cur, &v); err != nil {
				return cas.Decision{}, fmt.Errorf("lease: %q: %w: %v", EpochKey(key), ErrCorrupt, err)
			}
		}
		n = v.Creations
		if atLeast1 && n >= 1 {
			return cas.Abort(), nil
		}
		n++
		return cas.Set(encodeEpoch(n)), nil
	}, &cas.Options{UniqueValues: true})
	if errors.Is(err, cas.ErrContended) {
		return 0, fmt.Errorf("lease: acquire %q: %w (epoch counter: %w)", key, ErrLostRace, err)
	}
	if err != nil {
		return 0, fmt.Errorf("lease: acquire %q: epoch counter: %w", key, err)
	}
	return n, nil
}
