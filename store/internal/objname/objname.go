// Package objname is what the object-store backends (s3store, gcsstore,
// azblobstore) share about the names their keys get: the prefix a store
// is opened with, checked once by Open, and the service's limit on an
// object name, checked with store's guard before every operation.
package objname

import (
	"context"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/store"
)

// Prefix returns the form of the prefix p that a store puts before every
// key: "" when p is empty or only '/', else p without its leading and
// trailing '/' followed by one '/'. What is left of p must be a valid key
// (store.ValidateKey); otherwise the error says why.
func Prefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	if err := store.ValidateKey(p); err != nil {
		return "", err
	}
	return p + "/", nil
}

// Check is store.GuardKeyOrPrefix, then the service's limit: an
// *store.OpError matching store.ErrInvalidKey when name, the object name
// of key under the store's prefix, is longer than max bytes.
func Check(ctx context.Context, closed bool, backend, op, key string, isPrefix bool, name string, max int) error {
	if err := store.GuardKeyOrPrefix(ctx, closed, backend, op, key, isPrefix); err != nil {
		return err
	}
	if len(name) > max {
		return store.NewOpError(backend, op, key, store.ErrInvalidKey,
			fmt.Errorf("object name (store prefix and key) is %d bytes, longer than %d", len(name), max))
	}
	return nil
}
