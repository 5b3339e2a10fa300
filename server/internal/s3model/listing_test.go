package s3model

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// sliceIter is a keyIter over a sorted slice (the reference model).
type sliceIter struct {
	keys []string
	i    int
}

func (s *sliceIter) seek(k string) (string, bool) {
	s.i = sort.SearchStrings(s.keys, k)
	return s.get()
}
func (s *sliceIter) next() (string, bool) { s.i++; return s.get() }
func (s *sliceIter) get() (string, bool) {
	if s.i >= len(s.keys) {
		return "", false
	}
	return s.keys[s.i], true
}

// naiveList is the obviously-correct listing: every key after the marker,
// rolled up, deduplicated, without paging.
func naiveList(keys []string, prefix, delim string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		e := k
		if cp := rollup(k, prefix, delim); cp != "" {
			e = cp
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

func TestListKeysPagingMatchesModel(t *testing.T) {
	keys := []string{"a", "a/b", "a/c/d", "a/c/e", "a/d", "ab", "b/", "b/x", "b//y", "c", "c/d/e/f", "d/"}
	sort.Strings(keys)
	for _, prefix := range []string{"", "a", "a/", "a/c/", "b/", "zz"} {
		for _, delim := range []string{"", "/", "c/"} {
			want := naiveList(keys, prefix, delim)
			for max := 1; max <= 4; max++ {
				var got []string
				marker := ""
				for pages := 0; ; pages++ {
					if pages > 50 {
						t.Fatal("no progress")
					}
					p := listKeys(&sliceIter{keys: keys}, prefix, delim, marker, max, func(string) bool { return true })
					page := append(append([]string{}, p.Keys...), p.Prefixes...)
					sort.Strings(page)
					got = append(got, page...)
					if !p.Truncated {
						break
					}
					marker = p.Next
				}
				if !slices.Equal(got, want) {
					t.Fatalf("prefix %q delim %q max %d: got %q want %q", prefix, delim, max, got, want)
				}
			}
		}
	}
}

func TestListKeysSkipsDeadKeys(t *testing.T) {
	keys := []string{"x/1", "x/2", "y/1", "z"}
	dead := map[string]bool{"x/1": true, "x/2": true}
	p := listKeys(&sliceIter{keys: keys}, "", "/", "", 10, func(k string) bool { return !dead[k] })
	if !slices.Equal(p.Prefixes, []string{"y/"}) || !slices.Equal(p.Keys, []string{"z"}) {
		t.Fatalf("%+v", p)
	}
}
