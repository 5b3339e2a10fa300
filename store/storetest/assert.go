package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// put writes and fails the test on error; it checks the returned version
// is not empty.
func put(t *testing.T, ctx context.Context, s store.Store, key string, value []byte, cond store.Condition) store.Version {
	t.Helper()
	v, err := s.Put(ctx, key, value, cond)
	if err != nil {
		t.Fatalf("Put(%q, %s): %v", key, cond, err)
	}
	if v == "" {
		t.Fatalf("Put(%q, %s) returned the empty Version", key, cond)
	}
	return v
}

// get reads and fails the test on error.
func get(t *testing.T, ctx context.Context, s store.Store, key string) store.Entry {
	t.Helper()
	e, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return e
}

// del deletes and fails the test on error.
func del(t *testing.T, ctx context.Context, s store.Store, key string, cond store.Condition) {
	t.Helper()
	if err := s.Delete(ctx, key, cond); err != nil {
		t.Fatalf("Delete(%q, %s): %v", key, cond, err)
	}
}

// wantEntry checks that key holds value at version v (any version when v
// is empty).
func wantEntry(t *testing.T, ctx context.Context, s store.Store, key string, value []byte, v store.Version) {
	t.Helper()
	e, err := s.Get(ctx, key)
	if err != nil {
		t.Errorf("Get(%q): %v, want value %q", key, err, short(value))
		return
	}
	if !bytes.Equal(e.Value, value) {
		t.Errorf("Get(%q) value = %q, want %q", key, short(e.Value), short(value))
	}
	if v != "" && e.Version != v {
		t.Errorf("Get(%q) version = %q, want %q", key, e.Version, v)
	}
	if e.Key != "" && e.Key != key {
		t.Errorf("Get(%q) Entry.Key = %q", key, e.Key)
	}
}

// wantMissing checks that key does not exist.
func wantMissing(t *testing.T, ctx context.Context, s store.Store, key string) {
	t.Helper()
	e, err := s.Get(ctx, key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q) = (%q, %v), want ErrNotFound", key, short(e.Value), err)
	}
}

// wantErr checks that err matches target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want an error matching %v", what, err, target)
	}
}

// short trims a value for messages.
func short(b []byte) []byte {
	if len(b) > 64 {
		return append(b[:64:64], "..."...)
	}
	return b
}
