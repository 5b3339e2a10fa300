package failover

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func kinds(vs []Violation) map[string]int {
	m := map[string]int{}
	for _, v := range vs {
		m[v.Kind]++
	}
	return m
}

func TestCheckHoldings(t *testing.T) {
	good := []Holding{{0, 1, 0, 10 * ms}, {1, 2, 10 * ms, 20 * ms}, {2, 5, 30 * ms, 40 * ms}}
	if vs := CheckHoldings(good); len(vs) != 0 {
		t.Fatalf("a clean history: %v", vs)
	}
	t.Run("overlap is caught", func(t *testing.T) {
		bad := []Holding{{0, 1, 0, 10 * ms}, {1, 2, 9 * ms, 20 * ms}}
		if k := kinds(CheckHoldings(bad)); k["overlap"] != 1 || len(k) != 1 {
			t.Fatalf("got %v, want one overlap", k)
		}
	})
	t.Run("token inversion is caught", func(t *testing.T) {
		bad := []Holding{{1, 3, 20 * ms, 30 * ms}, {0, 1, 0, 10 * ms}, {2, 2, 40 * ms, 50 * ms}}
		if k := kinds(CheckHoldings(bad)); k["inversion"] != 1 || k["overlap"] != 0 {
			t.Fatalf("got %v, want one inversion", k)
		}
	})
	t.Run("equal tokens in two holdings are caught", func(t *testing.T) {
		bad := []Holding{{0, 4, 0, 10 * ms}, {1, 4, 20 * ms, 30 * ms}}
		if k := kinds(CheckHoldings(bad)); k["inversion"] != 1 {
			t.Fatalf("got %v, want one inversion", k)
		}
	})
}

func TestCheckFencedWrites(t *testing.T) {
	good := []AcceptedWrite{{5, 1}, {7, 1}, {9, 2}, {12, 4}}
	if vs := CheckFencedWrites(good); len(vs) != 0 {
		t.Fatalf("a clean history: %v", vs)
	}
	// A zombie's write with token 1 accepted after token 2's.
	bad := []AcceptedWrite{{9, 2}, {5, 1}, {11, 1}, {12, 3}}
	if k := kinds(CheckFencedWrites(bad)); k["inversion"] != 1 || len(k) != 1 {
		t.Fatalf("got %v, want one inversion", k)
	}
}

func TestCheckCounter(t *testing.T) {
	outcomes := map[string]Outcome{"a": Acked, "b": Acked, "c": Unknown, "d": Unknown, "e": Refused}
	for _, final := range [][]string{{"a", "b"}, {"a", "c", "b"}, {"d", "a", "b", "c"}} {
		r := CheckCounter(outcomes, final)
		if len(r.Violations) != 0 || r.Acked != 2 || r.Unknown != 2 || r.Refused != 1 || r.Applied != len(final) {
			t.Fatalf("clean %v: %+v", final, r)
		}
	}
	for _, tc := range []struct {
		name  string
		final []string
		want  string
	}{
		{"doubled increment is caught", []string{"a", "b", "a"}, "doubled"},
		{"lost increment is caught", []string{"a", "c"}, "lost"},
		{"refused but applied is caught", []string{"a", "b", "e"}, "refused-applied"},
		{"an id nobody sent is caught", []string{"a", "b", "z"}, "doubled"},
		{"too few is out of range", []string{"a"}, "out-of-range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := kinds(CheckCounter(outcomes, tc.final).Violations); k[tc.want] == 0 {
				t.Fatalf("got %v, want %s", k, tc.want)
			}
		})
	}
	// A doubled unknown increment keeps the count in range but is caught.
	r := CheckCounter(outcomes, []string{"a", "b", "c", "c"})
	if r.Doubled != 1 {
		t.Fatalf("doubled unknown: %+v", r)
	}
}

func TestStall(t *testing.T) {
	f := Fault{Kind: "kill-leader", Start: 100 * ms}
	ok := []time.Duration{50 * ms, 90 * ms, 400 * ms, 450 * ms, 1000 * ms, 1100 * ms}
	if got := Stall(f, 1200*ms, ok); got != 550*ms {
		t.Fatalf("Stall = %v, want 550ms (450ms to 1000ms)", got)
	}
	if got := Stall(f, 1200*ms, ok[:2]); got != 1100*ms {
		t.Fatalf("Stall with nothing after the fault = %v, want the whole window", got)
	}
	if got := Stall(f, 500*ms, ok); got != 300*ms {
		t.Fatalf("Stall = %v, want 300ms (fault to first success)", got)
	}
}
