// Package keyrange holds the two small facts about ranges of byte-ordered
// keys that several layers need: where the keys with a prefix end
// (PrefixEnd), and how many keys a cursor finds under a prefix, counted no
// further than a limit (Count). It imports the standard library only
// (internal/ is the ground floor); Count takes any cursor with bbolt's
// Seek and Next, so the server's models use it on their buckets.
package keyrange

import "bytes"

// PrefixEnd returns the smallest string greater than every string that
// starts with p, or "" when there is none (p is empty or all 0xff bytes):
// the exclusive end of a scan of the prefix.
func PrefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// Cursor walks keys in byte order, as *bbolt.Cursor does: Seek moves to
// the first key at or after seek, Next to the key after; a nil key means
// there is none.
type Cursor interface {
	Seek(seek []byte) (key, value []byte)
	Next() (key, value []byte)
}

// Count counts the keys of c that start with prefix (every key, for an
// empty prefix), stopping at limit: n is at most limit, and more reports
// that at least one key lies beyond it (n is then a lower bound).
func Count(c Cursor, prefix []byte, limit int) (n int, more bool) {
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if n >= limit {
			return n, true
		}
		n++
	}
	return n, false
}
