package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// BadKey is a key that breaks the rules of store.ValidateKey, and why.
type BadKey struct{ Key, Why string }

// InvalidKeys returns keys that break the rules of store.ValidateKey.
// Every backend must refuse each of them with store.ErrInvalidKey; a
// server's API tests can reuse the table.
func InvalidKeys() []BadKey { return slices.Clone(invalidKeys) }

var invalidKeys = []BadKey{
	{"", "empty"},
	{"/a", "leading slash"},
	{"a/", "trailing slash"},
	{"a//b", "doubled slash"},
	{"/", "only a slash"},
	{".", "dot segment"},
	{"..", "dot-dot segment"},
	{"a/./b", "inner dot segment"},
	{"a/../b", "inner dot-dot segment"},
	{"../a", "leading dot-dot segment"},
	{"a/..", "trailing dot-dot segment"},
	{"a\x00b", "NUL"},
	{"a\nb", "newline"},
	{"a\tb", "tab"},
	{"\x1f", "unit separator"},
	{"a\x7f", "DEL"},
	{"a\xffb", "invalid UTF-8"},
	{"\xc3", "truncated UTF-8"},
	{strings.Repeat("k", store.MaxKeyLen+1), "MaxKeyLen+1 bytes"},
}

// ValidKeys returns unusual keys every backend must store and return
// intact: spaces, dots, URL metacharacters, non-ASCII, MaxKeyLen bytes.
func ValidKeys() []string { return slices.Clone(validKeys) }

var validKeys = []string{
	"k",
	"a/b/c",
	"with space",
	"a.b",
	"...",
	"a..b",
	".hidden",
	"a/.b/c.",
	"percent%2Fslash",
	"plus+sign",
	"q?x=1&y=2#frag",
	"tilde~star*",
	"quote\"apos'",
	"back\\slash",
	"ключ/値/🔑",
	"\u00e9t\u00e9",
	"e\u0301te\u0301", // decomposed: a different key from the one above
	strings.Repeat("k", store.MaxKeyLen),
	strings.Repeat("abcdefg/", store.MaxKeyLen/8-1) + "abcdefgh",
}

var keyTests = []subtest{
	{name: "invalid keys return ErrInvalidKey", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		caps := s.Capabilities()
		for _, bad := range invalidKeys {
			if store.ValidateKey(bad.Key) == nil {
				t.Fatalf("storetest: %q (%s) passes store.ValidateKey", bad.Key, bad.Why)
			}
			q := fmt.Sprintf("%.40q (%s)", bad.Key, bad.Why)
			_, err := s.Get(ctx, bad.Key)
			wantErr(t, "Get "+q, err, store.ErrInvalidKey)
			_, err = s.Put(ctx, bad.Key, []byte("x"), store.Unconditional)
			wantErr(t, "Put "+q, err, store.ErrInvalidKey)
			if caps.CreateIfAbsent {
				_, err = s.Put(ctx, bad.Key, []byte("x"), store.IfAbsent)
				wantErr(t, "PutIfAbsent "+q, err, store.ErrInvalidKey)
			}
			wantErr(t, "Delete "+q, s.Delete(ctx, bad.Key, store.Unconditional), store.ErrInvalidKey)
		}
		page, err := s.List(ctx, "", nil)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Items) != 0 {
			t.Errorf("after refused writes, List = %+v, want nothing", page.Items)
		}
	}},
	{name: "unusual valid keys round-trip", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		want := map[string]store.Version{}
		for i, k := range validKeys {
			if err := store.ValidateKey(k); err != nil {
				t.Fatalf("storetest: valid key %q: %v", k, err)
			}
			want[k] = put(t, ctx, s, k, fmt.Appendf(nil, "value %d", i), store.Unconditional)
		}
		for i, k := range validKeys {
			wantEntry(t, ctx, s, k, fmt.Appendf(nil, "value %d", i), want[k])
		}
		got := map[string]store.Version{}
		for it, err := range store.All(ctx, s, "") {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			got[it.Key] = it.Version
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("List: key %.40q has version %q, want %q", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("List returned %d keys, want %d", len(got), len(want))
		}
	}},
}

var valueTests = []subtest{
	{name: "empty value round-trips", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		put(t, ctx, s, "nil", nil, store.Unconditional)
		put(t, ctx, s, "empty", []byte{}, store.Unconditional)
		for _, k := range []string{"nil", "empty"} {
			e := get(t, ctx, s, k)
			if len(e.Value) != 0 {
				t.Errorf("Get(%q) = %q, want an empty value", k, e.Value)
			}
		}
	}},
	{name: "all 256 byte values round-trip", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := make([]byte, 0, 512)
		for i := range 256 {
			v = append(v, byte(i))
		}
		for i := 255; i >= 0; i-- {
			v = append(v, byte(i))
		}
		ver := put(t, ctx, s, "bin", v, store.Unconditional)
		wantEntry(t, ctx, s, "bin", v, ver)
	}},
	{name: "a value of 1 MiB (or MaxValueSize) round-trips", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		n := 1 << 20
		if h.MaxValueSize > 0 && h.MaxValueSize < n {
			n = h.MaxValueSize
		}
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(i*7 + i>>8)
		}
		ver := put(t, ctx, s, "big", v, store.Unconditional)
		e := get(t, ctx, s, "big")
		if !bytes.Equal(e.Value, v) || e.Version != ver {
			t.Errorf("Get of a %d-byte value returned %d bytes at %q (equal=%v), want version %q",
				n, len(e.Value), e.Version, bytes.Equal(e.Value, v), ver)
		}
	}},
	{name: "the caller's slices are not retained", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		in := []byte("original")
		ver := put(t, ctx, s, "k", in, store.Unconditional)
		copy(in, "mutated!")
		wantEntry(t, ctx, s, "k", []byte("original"), ver)
		e := get(t, ctx, s, "k")
		copy(e.Value, "mutated!")
		wantEntry(t, ctx, s, "k", []byte("original"), ver)
	}},
}

var closeTests = []subtest{
	{name: "calls after Close fail with ErrClosed", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		_, err := s.Get(ctx, "k")
		wantErr(t, "Get after Close", err, store.ErrClosed)
		_, err = s.Put(ctx, "k", []byte("y"), store.Unconditional)
		wantErr(t, "Put after Close", err, store.ErrClosed)
		wantErr(t, "Delete after Close", s.Delete(ctx, "k", store.Unconditional), store.ErrClosed)
		_, err = s.List(ctx, "", nil)
		wantErr(t, "List after Close", err, store.ErrClosed)
		if hasTxn(s) {
			_, err = s.(store.Transactor).Txn(ctx, []store.TxnOp{store.PutOp("k", []byte("y"), store.Unconditional)})
			wantErr(t, "Txn after Close", err, store.ErrClosed)
		}
		if hasWatch(s) {
			err = runDone(t, ctx, s, ctxOp{"WaitChange after Close", func(ctx context.Context, s store.Store) error {
				return s.(store.Watcher).WaitChange(ctx, "k", v)
			}})
			wantErr(t, "WaitChange after Close", err, store.ErrClosed)
		}
	}},
}
