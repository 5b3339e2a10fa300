package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/store"
)

// fenceHeader starts every fenced value: "latchkey-fenced <token>\n".
const fenceHeader = "latchkey-fenced "

// maxFenceAttempts bounds FencedPut's compare-and-swap loop.
const maxFenceAttempts = 50

// ErrContended is returned (wrapped) when FencedPut lost the
// compare-and-swap race maxFenceAttempts times in a row.
var ErrContended = errors.New("too contended")

// FencedPut writes value under key, a resource protected by a lease, only
// if token is at least the newest token the key has accepted: it stores
// the token alongside the value and advances it by compare-and-swap. A
// write carrying an older token, typically from a holder that was paused
// past its lease and resumed as a zombie, fails with an error matching
// ErrFenced and changes nothing. Equal tokens are accepted, so one holding
// may write many times. Read the value back with FencedGet.
//
// On store.ErrConflict it re-reads and tries again, at most a bounded
// number of times with jittered backoff; an unknown outcome is resolved by
// reading back.
func FencedPut(ctx context.Context, s store.Store, key string, value []byte, token uint64) (store.Version, error) {
	body := encodeFenced(value, token)
	for attempt := 1; ; attempt++ {
		cond := store.IfAbsent
		e, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return "", fmt.Errorf("lease: fenced put %q: %w", key, err)
		default:
			_, cur, err := decodeFenced(key, e.Value)
			if err != nil {
				return "", err
			}
			if token < cur {
				return "", fmt.Errorf("lease: fenced put %q: %w: token %d, accepted %d", key, ErrFenced, token, cur)
			}
			cond = store.IfMatch(e.Version)
		}
		v, err := s.Put(ctx, key, body, cond)
		if err == nil {
			return v, nil
		}
		if retryable(err) {
			if e, gerr := s.Get(ctx, key); gerr == nil && bytes.Equal(e.Value, body) {
				return e.Version, nil
			}
		} else if !errors.Is(err, store.ErrConflict) {
			return "", fmt.Errorf("lease: fenced put %q: %w", key, err)
		}
		if attempt == maxFenceAttempts {
			return "", fmt.Errorf("lease: fenced put %q: %w after %d attempts: %w", key, ErrContended, attempt, err)
		}
		t := time.NewTimer(backoff(10*time.Millisecond, attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("lease: fenced put %q: %w", key, ctx.Err())
		}
	}
}

// FencedGet returns the value FencedPut stored under key, the newest token
// the key accepted, and the version.
func FencedGet(ctx context.Context, s store.Store, key string) ([]byte, uint64, store.Version, error) {
	e, err := s.Get(ctx, key)
	if err != nil {
		return nil, 0, "", fmt.Errorf("lease: fenced get %q: %w", key, err)
	}
	v, tok, err := decodeFenced(key, e.Value)
	return v, tok, e.Version, err
}

func encodeFenced(value []byte, token uint64) []byte {
	b := make([]byte, 0, len(fenceHeader)+21+len(value))
	b = append(b, fenceHeader...)
	b = strconv.AppendUint(b, token, 10)
	b = append(b, '\n')
	return append(b, value...)
}

func decodeFenced(key string, b []byte) ([]byte, uint64, error) {
	rest, ok := bytes.CutPrefix(b, []byte(fenceHeader))
	line, value, ok2 := bytes.Cut(rest, []byte{'\n'})
	tok, err := strconv.ParseUint(string(line), 10, 64)
	if !ok || !ok2 || err != nil {
		return nil, 0, fmt.Errorf("lease: %q: %w: not a fenced value", key, ErrCorrupt)
	}
	return value, tok, nil
}
