package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"a/b/c", true},
		{"a b", true},
		{"...", true},
		{"a..b", true},
		{".a/b.", true},
		{"ключ/🔑", true},
		{"~!@#$%^&*()_+={}[]|\\:;\"'<>,?", true},
		{"\u0080", true}, // C1 range is not a control character under the rules
		{strings.Repeat("x", store.MaxKeyLen), true},
		{strings.Repeat("é", store.MaxKeyLen/2), true}, // 1024 bytes of 2-byte runes
		{"", false},
		{strings.Repeat("x", store.MaxKeyLen+1), false},
		{strings.Repeat("é", store.MaxKeyLen/2) + "x", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{"/", false},
		{"//", false},
		{".", false},
		{"..", false},
		{"a/./b", false},
		{"a/../b", false},
		{"./a", false},
		{"a/.", false},
		{"a\x00", false},
		{"a\nb", false},
		{"a\rb", false},
		{"\x1f", false},
		{"\x7f", false},
		{"a\xffb", false},
		{"\xc3\x28", false},
		{"\xed\xa0\x80", false}, // UTF-16 surrogate encoded in UTF-8
	}
	for _, tt := range tests {
		err := store.ValidateKey(tt.key)
		if tt.ok && err != nil {
			t.Errorf("ValidateKey(%.40q) = %v, want nil", tt.key, err)
		}
		if !tt.ok {
			if !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("ValidateKey(%.40q) = %v, want ErrInvalidKey", tt.key, err)
			} else if !strings.Contains(err.Error(), "invalid key") {
				t.Errorf("ValidateKey(%.40q) error %q does not say what is wrong", tt.key, err)
			}
		}
	}
}

func TestValidateKeyMessagesSayWhy(t *testing.T) {
	for key, why := range map[string]string{
		"":                        "empty",
		"a//b":                    "empty path segment",
		"a/../b":                  "'..'",
		"a\x01":                   "control character",
		"\xff":                    "UTF-8",
		strings.Repeat("k", 1025): "longer than 1024",
	} {
		err := store.ValidateKey(key)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ValidateKey(%.20q) = %v, want a message containing %q", key, err, why)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, p := range []string{"", "a", "a/", "a/b/", "a/b", "..a", strings.Repeat("x", store.MaxKeyLen) + "/"} {
		if err := store.ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%.40q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"/", "/a", "a//", "a//b/", "../", "a/./", "a\x00", "\xff/"} {
		if err := store.ValidatePrefix(p); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("ValidatePrefix(%q) = %v, want ErrInvalidKey", p, err)
		}
	}
}
