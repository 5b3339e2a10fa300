package filestore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/latchkey/latchkey/store"
)

func itoa(n int) string { return strconv.Itoa(n) }

// increment adds one to the decimal counter at key by read and
// compare-and-swap, retrying conflicts a bounded number of times.
func increment(ctx context.Context, s store.Store, key string) error {
	for range 10000 {
		e, err := s.Get(ctx, key)
		cond, n := store.IfMatch(e.Version), 0
		switch {
		case errors.Is(err, store.ErrNotFound):
			cond = store.IfAbsent
		case err != nil:
			return err
		default:
			if n, err = strconv.Atoi(string(e.Value)); err != nil {
				return err
			}
		}
		_, err = s.Put(ctx, key, []byte(strconv.Itoa(n+1)), cond)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("increment %q: too many conflicts", key)
}
