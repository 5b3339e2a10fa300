package s3model

import (
	"bytes"
	"strings"

	"github.com/latchkey/latchkey/internal/keyrange"
)

// keyIter walks the distinct object keys of one bucket in byte order.
type keyIter interface {
	// seek positions the iterator at the first key >= k.
	seek(k string) (key string, ok bool)
	// next advances to the key after the current one.
	next() (key string, ok bool)
}

// Page is one page of a delimiter listing of current objects: Keys and
// Prefixes are each in order, and together hold at most max entries.
type Page struct {
	Keys      []string
	Prefixes  []string
	Truncated bool
	// Next is the last key or common prefix of the page; resume with it as
	// the marker.
	Next string
	// Current holds the current version of every key of Keys.
	Current map[string]Version
}

// rollup returns the common prefix key falls under, or "" when key is not
// rolled up (no delimiter after prefix).
func rollup(key, prefix, delim string) string {
	if delim == "" {
		return ""
	}
	rest := key[len(prefix):]
	i := strings.Index(rest, delim)
	if i < 0 {
		return ""
	}
	return prefix + rest[:i+len(delim)]
}

// startAfter is where a listing resumes after marker: strictly after it,
// and past every key of marker's common prefix when marker lies in one.
func startAfter(prefix, delim, marker string) string {
	start := prefix
	if marker == "" || marker < prefix {
		return start
	}
	if strings.HasPrefix(marker, prefix) {
		if cp := rollup(marker, prefix, delim); cp != "" {
			if end := keyrange.PrefixEnd(cp); end != "" {
				return end
			}
		}
	}
	// Keys cannot contain NUL, so marker "\x01" is the smallest key after
	// marker (and, in the version table, it is past marker's own versions).
	return marker + "\x01"
}

// listKeys computes one page. live reports whether a key counts (a key
// whose current version is a delete marker does not, and it does not make
// a common prefix appear either).
func listKeys(it keyIter, prefix, delim, marker string, max int, live func(string) bool) Page {
	var p Page
	if max <= 0 {
		return p
	}
	key, ok := it.seek(startAfter(prefix, delim, marker))
	for ok && strings.HasPrefix(key, prefix) {
		if !live(key) {
			key, ok = it.next()
			continue
		}
		if len(p.Keys)+len(p.Prefixes) == max {
			p.Truncated = true
			return p
		}
		if cp := rollup(key, prefix, delim); cp != "" {
			p.Prefixes = append(p.Prefixes, cp)
			p.Next = cp
			end := keyrange.PrefixEnd(cp)
			if end == "" {
				break
			}
			key, ok = it.seek(end)
			continue
		}
		p.Keys = append(p.Keys, key)
		p.Next = key
		key, ok = it.next()
	}
	return p
}

// ListCurrent lists the live keys of bucket (current version not a
// delete marker) under prefix after marker, rolled up at delim, at most
// max entries.
func (m *Model) ListCurrent(bucket, prefix, delim, marker string, max int) (Page, error) {
	var out Page
	err := m.view(func(s *records) error {
		if _, err := s.mustBucket(bucket); err != nil {
			return err
		}
		cur := map[string]Version{}
		it := &keyCursor{bp: bucketPrefix(bucket)}
		if b := s.read(tblVersions); b != nil {
			it.c = b.Cursor()
		}
		out = listKeys(it, prefix, delim, marker, max, func(key string) bool {
			if it.err != nil || it.cur.Marker {
				return false
			}
			cur[key] = it.cur
			return true
		})
		out.Current = cur
		return it.err
	})
	return out, err
}

// keyCursor is the keyIter of the version table: it stands on the first
// (current) version of each key.
type keyCursor struct {
	c   cursor
	bp  []byte
	key string
	cur Version
	err error
}

func (it *keyCursor) at(k, v []byte) (string, bool) {
	if k == nil || !bytes.HasPrefix(k, it.bp) {
		return "", false
	}
	key, _, ok := splitVersionKey(k, len(it.bp))
	if !ok {
		return "", false
	}
	it.key = key
	it.cur, it.err = decode[Version](v)
	return key, it.err == nil
}

func (it *keyCursor) seek(k string) (string, bool) {
	if it.c == nil {
		return "", false
	}
	return it.at(it.c.Seek(seekKey(it.bp, k)))
}

func (it *keyCursor) next() (string, bool) {
	if it.c == nil {
		return "", false
	}
	// Older versions of it.key sort right after it.key "\x00"; the first
	// entry at or after it.key "\x01" is the next key.
	return it.at(it.c.Seek(append(seekKey(it.bp, it.key), 1)))
}
