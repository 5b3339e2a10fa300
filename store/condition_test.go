package store_test

import (
	"testing"

	"github.com/latchkey/latchkey/store"
)

func TestConditionHolds(t *testing.T) {
	tests := []struct {
		cond    store.Condition
		exists  bool
		current store.Version
		want    bool
	}{
		{store.Unconditional, false, "", true},
		{store.Unconditional, true, "v1", true},
		{store.IfAbsent, false, "", true},
		{store.IfAbsent, true, "v1", false},
		{store.IfMatch("v1"), true, "v1", true},
		{store.IfMatch("v1"), true, "v2", false},
		{store.IfMatch("v1"), false, "", false},
		{store.IfMatch("v1"), false, "v1", false}, // a stale version of a deleted key
		{store.IfMatch(""), true, "", false},      // the zero Version never matches
		{store.IfMatch(""), false, "", false},
		{store.Condition{}, true, "v", true}, // the zero Condition is Unconditional
	}
	for _, tt := range tests {
		if got := tt.cond.Holds(tt.exists, tt.current); got != tt.want {
			t.Errorf("%s.Holds(exists=%v, %q) = %v, want %v", tt.cond, tt.exists, tt.current, got, tt.want)
		}
	}
}

func TestConditionAccessors(t *testing.T) {
	if !store.Unconditional.IsUnconditional() || store.Unconditional.IsAbsent() {
		t.Error("Unconditional misreports itself")
	}
	if !store.IfAbsent.IsAbsent() || store.IfAbsent.IsUnconditional() {
		t.Error("IfAbsent misreports itself")
	}
	if _, ok := store.IfAbsent.Match(); ok {
		t.Error("IfAbsent.Match() reports a version")
	}
	c := store.IfMatch("v7")
	if v, ok := c.Match(); !ok || v != "v7" || c.IsAbsent() || c.IsUnconditional() {
		t.Errorf("IfMatch(v7).Match() = %q, %v", v, ok)
	}
	for c, want := range map[store.Condition]string{
		store.Unconditional: "unconditional",
		store.IfAbsent:      "if-absent",
		store.IfMatch("v7"): `if-match "v7"`,
	} {
		if got := c.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
