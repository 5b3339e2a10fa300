package resolve

import (
	"crypto/rand"
	"encoding/hex"
)

// NewNonce returns a fresh random nonce for one write, as 32 hex digits:
// the mark a backend stores with the value (in metadata) so that a
// resolution can tell whether the key holds this write.
func NewNonce() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
