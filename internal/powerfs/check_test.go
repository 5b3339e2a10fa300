package powerfs

import (
	"strings"
	"testing"
)

func TestSurvived(t *testing.T) {
	s := func(v string) *string { return &v }
	acked := map[string]*string{"put": s("a"), "deleted": nil}
	inflight := map[string]*string{"put": s("b"), "new": s("c"), "deleting": nil}
	for _, tt := range []struct {
		key  string
		got  *string
		want bool
	}{
		{"put", s("a"), true},
		{"put", s("b"), true},  // the write in flight landed
		{"put", nil, false},    // an acknowledged write lost
		{"put", s("x"), false}, // bytes nobody wrote
		{"deleted", nil, true},
		{"deleted", s("a"), false},
		{"new", nil, true}, // never acknowledged: absent, or the write in flight
		{"new", s("c"), true},
		{"never", nil, true},
		{"never", s("c"), false},
		{"deleting", nil, true},
	} {
		if got := Survived(tt.got, tt.key, acked, inflight); got != tt.want {
			t.Errorf("Survived(%s, %q) = %v, want %v", Show(tt.got), tt.key, got, tt.want)
		}
	}
}

func TestShow(t *testing.T) {
	long := strings.Repeat("x", 25)
	for _, tt := range []struct {
		v    *string
		want string
	}{{nil, "absent"}, {new(string), `""`}, {&long, `"` + long[:20] + `"…`}} {
		if got := Show(tt.v); got != tt.want {
			t.Errorf("Show = %s, want %s", got, tt.want)
		}
	}
}
