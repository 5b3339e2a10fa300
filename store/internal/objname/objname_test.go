package objname

import (
	"errors"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
)

func TestPrefix(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""}, {"/", ""}, {"//", ""}, {"a", "a/"}, {"/a/b/", "a/b/"}, {"a/b", "a/b/"},
	} {
		if got, err := Prefix(tt.in); err != nil || got != tt.want {
			t.Errorf("Prefix(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"a//b", "a/../b", "\xff"} {
		if got, err := Prefix(bad); err == nil {
			t.Errorf("Prefix(%q) = %q, want an error", bad, got)
		}
	}
}

func TestCheck(t *testing.T) {
	ctx := t.Context()
	if err := Check(ctx, false, "b", "put", "k", false, "p/k", 3); err != nil {
		t.Fatalf("a name of the limit's length: %v", err)
	}
	err := Check(ctx, false, "b", "put", "k", false, "p/kk", 3)
	var oe *store.OpError
	if !errors.Is(err, store.ErrInvalidKey) || !errors.As(err, &oe) || oe.Key != "k" || !strings.Contains(err.Error(), "4 bytes, longer than 3") {
		t.Fatalf("a name over the limit: %v, want ErrInvalidKey naming the key and the lengths", err)
	}
	if err := Check(ctx, true, "b", "put", "k", false, "p/kk", 3); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("closed store: %v, want the guard's ErrClosed first", err)
	}
	if err := Check(ctx, false, "b", "list", "a/", true, "p/a/", 9); err != nil {
		t.Fatalf("a valid List prefix: %v", err)
	}
}
