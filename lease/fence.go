package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
)

// fenceHeader starts every fenced value: "latchkey-fenced <token>\n".
const fenceHeader = "latchkey-fenced "

// ErrContended is returned (wrapped) when FencedPut, ForceRelease or
// ReleaseHolder lost the compare-and-swap race too many times in a row.
// It is cas.ErrContended.
var ErrContended = cas.ErrContended

// FencedPut writes value under key, a resource protected by a lease, only
// if token is at least the newest token the key has accepted: it stores
// the token alongside the value and advances it by compare-and-swap. A
// write carrying an older token, typically from a holder that was paused
// past its lease and resumed as a zombie, fails with an error matching
// ErrFenced and changes nothing. Equal tokens are accepted, so one holding
// may write many times. Read the value back with FencedGet.
//
// It is one cas.Update: on store.ErrConflict it re-reads and tries again,
// a bounded number of times with jittered exponential backoff, then fails
// with an error matching ErrContended. A write of unknown outcome counts
// as written when a re-read finds exactly its bytes: the key then holds
// this value under this token, whoever wrote it.
func FencedPut(ctx context.Context, s store.Store, key string, value []byte, token uint64) (store.Version, error) {
	body := encodeFenced(value, token)
	res, err := cas.Update(ctx, s, key, func(cur []byte, exists bool) (cas.Decision, error) {
		if exists {
			_, accepted, err := decodeFenced(key, cur)
			if err != nil {
				return cas.Decision{}, err
			}
			if token < accepted {
				return cas.Decision{}, fmt.Errorf("lease: fenced put %q: %w: token %d, accepted %d", key, ErrFenced, token, accepted)
			}
		}
		return cas.Set(body), nil
	}, &releaseOptions)
	if errors.Is(err, ErrFenced) || errors.Is(err, ErrCorrupt) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("lease: fenced put %q: %w", key, err)
	}
	return res.Entry.Version, nil
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
