package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/store"
)

func TestGuard(t *testing.T) {
	live := t.Context()
	done, cancel := context.WithCancel(live)
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		closed bool
		prefix bool
		key    string
		want   []error // nil: no error
	}{
		{name: "valid key passes", ctx: live, key: "a/b"},
		{name: "empty prefix passes", ctx: live, prefix: true, key: ""},
		{name: "prefix ending in slash passes", ctx: live, prefix: true, key: "a/"},
		{name: "closed store returns ErrClosed", ctx: live, closed: true, key: "a", want: []error{store.ErrClosed}},
		{name: "closed comes before a done context", ctx: done, closed: true, key: "a", want: []error{store.ErrClosed}},
		{name: "done context returns ErrTransient and the context's error", ctx: done, key: "a", want: []error{store.ErrTransient, context.Canceled}},
		{name: "done context comes before a bad key", ctx: done, key: "", want: []error{store.ErrTransient}},
		{name: "bad key returns ErrInvalidKey", ctx: live, key: "a//b", want: []error{store.ErrInvalidKey}},
		{name: "empty key is invalid", ctx: live, key: "", want: []error{store.ErrInvalidKey}},
		{name: "key ending in slash is invalid", ctx: live, key: "a/", want: []error{store.ErrInvalidKey}},
		{name: "bad prefix returns ErrInvalidKey", ctx: live, prefix: true, key: "../", want: []error{store.ErrInvalidKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := store.GuardKeyOrPrefix(tt.ctx, tt.closed, "testbackend", "get", tt.key, tt.prefix)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want one matching %v", err, w)
				}
			}
			var oe *store.OpError
			if !errors.As(err, &oe) || oe.Backend != "testbackend" || oe.Op != "get" || oe.Key != tt.key {
				t.Errorf("err = %#v, want an *OpError naming testbackend, get and %q", err, tt.key)
			}
		})
	}
}
