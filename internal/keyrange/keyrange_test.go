package keyrange

import (
	"slices"
	"strings"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for p, want := range map[string]string{
		"":             "",
		"a":            "b",
		"a/":           "a0",
		"a\xff":        "b",
		"a\xfe\xff":    "a\xff",
		"\xff\xff":     "",
		"photos/2024/": "photos/20240",
	} {
		got := PrefixEnd(p)
		if got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", p, got, want)
			continue
		}
		if got != "" && (!(p < got) || strings.HasPrefix(got, p)) {
			t.Errorf("PrefixEnd(%q) = %q is not past every key with the prefix", p, got)
		}
	}
}

// sliceCursor is a Cursor over sorted keys.
type sliceCursor struct {
	keys []string
	i    int
}

func (c *sliceCursor) at() ([]byte, []byte) {
	if c.i >= len(c.keys) {
		return nil, nil
	}
	return []byte(c.keys[c.i]), nil
}

func (c *sliceCursor) Seek(seek []byte) ([]byte, []byte) {
	c.i, _ = slices.BinarySearch(c.keys, string(seek))
	return c.at()
}

func (c *sliceCursor) Next() ([]byte, []byte) {
	c.i++
	return c.at()
}

func TestCountStopsAtTheLimit(t *testing.T) {
	keys := []string{"a", "b/1", "b/2", "b/3", "c"}
	for _, c := range []struct {
		prefix string
		limit  int
		n      int
		more   bool
	}{
		{"b/", 10, 3, false},
		{"b/", 3, 3, false},
		{"b/", 2, 2, true},
		{"b/", 0, 0, true},
		{"", 4, 4, true},
		{"", 5, 5, false},
		{"d", 5, 0, false},
		{"b/4", 5, 0, false},
	} {
		n, more := Count(&sliceCursor{keys: keys}, []byte(c.prefix), c.limit)
		if n != c.n || more != c.more {
			t.Errorf("Count(%q, %d) = %d, %v; want %d, %v", c.prefix, c.limit, n, more, c.n, c.more)
		}
	}
}
