package storeurl

import (
	"context"
	"errors"
	"net/url"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// openMem opens mem://: a fresh in-memory store.
func openMem(_ context.Context, u *url.URL) (store.Store, error) {
	if u.Opaque != "" || u.Host != "" || (u.Path != "" && u.Path != "/") || u.User != nil {
		return nil, errors.New("mem:// takes no host or path")
	}
	if _, err := params(u); err != nil {
		return nil, err
	}
	return memstore.New(), nil
}
