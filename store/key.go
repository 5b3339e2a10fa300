package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key, in bytes, that every backend accepts (S3's
// limit).
const MaxKeyLen = 1024

// ValidateKey enforces the portable key rules, so that a key that works on
// one backend works on every backend and never names a path outside a
// store's directory:
//
//   - 1 to MaxKeyLen bytes of valid UTF-8;
//   - no control characters (U+0000–U+001F, U+007F);
//   - '/' separates segments; no segment is empty (no leading, trailing or
//     doubled '/') and no segment is "." or "..".
//
// A bad key yields an error matching ErrInvalidKey that says why.
func ValidateKey(key string) error {
	if why := keyProblem(key); why != "" {
		return &keyError{key: key, why: why}
	}
	return nil
}

// ValidatePrefix accepts what may start a valid key: the empty prefix, or a
// prefix that obeys the key rules except that it may end with '/'.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if why := keyProblem(strings.TrimSuffix(prefix, "/")); why != "" {
		return &keyError{key: prefix, prefix: true, why: why}
	}
	return nil
}

// keyError is what ValidateKey and ValidatePrefix return. An *OpError
// about the same key prints only why, so the key is not named twice.
type keyError struct {
	key    string
	prefix bool
	why    string
}

func (e *keyError) Error() string {
	if e.prefix {
		return fmt.Sprintf("%v: prefix %q: %s", ErrInvalidKey, e.key, e.why)
	}
	return fmt.Sprintf("%v %q: %s", ErrInvalidKey, e.key, e.why)
}

func (e *keyError) Unwrap() error { return ErrInvalidKey }

func keyProblem(key string) string {
	switch {
	case key == "":
		return "empty"
	case len(key) > MaxKeyLen:
		return fmt.Sprintf("longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		return "not valid UTF-8"
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return "contains a control character"
		}
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return "empty path segment (leading, trailing or doubled '/')"
		case ".", "..":
			return "'.' or '..' path segment"
		}
	}
	return ""
}
