package crashtest

import (
	"strings"
	"testing"
	"time"
)

// Check must accept every outcome an unknown write may have had and
// reject a lost acknowledged write, a visible refused one, and an unknown
// one taking effect after the crash that bounded it.
func TestCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := func(out Outcome, expect, val string, call, ret int) Op {
		return Op{Key: "k", Expect: expect, New: val, Outcome: out, Call: at(call), Return: at(ret)}
	}
	r := func(val string, call, ret int) Op {
		return Op{Key: "k", Read: true, Value: val, Call: at(call), Return: at(ret)}
	}
	cases := []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"acknowledged write read back", []Op{w(Done, "", "a", 0, 1), r("a", 2, 3)}, true},
		{"acknowledged write lost", []Op{w(Done, "", "a", 0, 1), r("", 2, 3)}, false},
		{"refused write visible", []Op{w(Done, "", "a", 0, 1), w(Refused, "x", "b", 2, 3), r("b", 4, 5)}, false},
		{"refused though its condition held", []Op{w(Done, "", "a", 0, 1), w(Refused, "a", "b", 2, 3)}, false},
		{"aborted write changes nothing", []Op{w(Done, "", "a", 0, 1), w(Aborted, "a", "b", 2, 3), r("a", 4, 5)}, true},
		{"unknown write landed", []Op{w(Done, "", "a", 0, 1), w(Unknown, "a", "b", 2, 10), r("b", 11, 12)}, true},
		{"unknown write did not land", []Op{w(Done, "", "a", 0, 1), w(Unknown, "a", "b", 2, 10), r("a", 11, 12)}, true},
		{"unknown write lands after the crash", []Op{w(Done, "", "a", 0, 1), w(Unknown, "a", "b", 2, 10),
			r("a", 11, 12), r("b", 13, 14)}, false},
		{"index went back: an older value returns", []Op{w(Done, "", "a", 0, 1), w(Done, "a", "b", 2, 3),
			r("b", 4, 5), r("a", 6, 7)}, false},
	}
	for _, c := range cases {
		err := Check(c.ops, time.Second)
		if (err == nil) != c.ok {
			t.Errorf("%s: Check = %v, want linearizable %v", c.name, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "not linearizable") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	var h History
	h.Add(w(Unknown, "", "a", 0, 0))
	h.Add(w(Unknown, "", "b", 20, 0))
	h.Crashed(at(10))
	ops := h.Ops()
	if len(ops) != 1 || !ops[0].Return.Equal(at(10)) {
		t.Fatalf("after Crashed: %+v; want the first op bounded at the crash, the second (called later) dropped", ops)
	}
}
