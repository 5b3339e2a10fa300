package s3api

import (
	"encoding/base64"
	"strings"
)

// keyIter walks the distinct object keys of one bucket in byte order.
type keyIter interface {
	// seek positions the iterator at the first key >= k.
	seek(k string) (key string, ok bool)
	// next advances to the key after the current one.
	next() (key string, ok bool)
}

// listPage is one page of a delimiter listing: Keys and Prefixes are each
// in order, and together hold at most max entries.
type listPage struct {
	Keys      []string
	Prefixes  []string
	Truncated bool
	// Next is the last key or common prefix of the page; resume with it as
	// the marker.
	Next string
}

// prefixEnd is the smallest string greater than every string that starts
// with p ("" when there is none).
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
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
			if end := prefixEnd(cp); end != "" {
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
func listKeys(it keyIter, prefix, delim, marker string, max int, live func(string) bool) listPage {
	var p listPage
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
			end := prefixEnd(cp)
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

// Continuation tokens are the opaque base64 of the page's last entry.
func encodeToken(marker string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(marker))
}

func decodeToken(tok string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	return string(b), err == nil
}

// s3URLEncode encodes a key for encoding-type=url the way S3 does: like a
// URL path segment with "/" kept: a space is %20 and "+" is %2B (as
// ceph/s3-tests' encoding tests, which run against AWS, expect).
func s3URLEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
