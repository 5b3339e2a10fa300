package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeprobe"
)

// The checks of store/storeprobe are defined there once and run here, each
// as a subtest of the group its area names: "cas/stale version returns
// ErrConflict and keeps the value" runs as "PutIfMatch/stale version
// returns ErrConflict and keeps the value". So `latchkey probe` against a
// live store and this suite against a backend check those obligations the
// same way; the suite adds what a probe of a live store cannot afford
// (many racers, random models, linearizability, fault injection).

// probeGroups maps the area of a probe check's name to the group that runs
// it. A check whose area is not here is not run (TestEveryProbeCheckRuns
// fails).
var probeGroups = map[string]string{
	"get":       "Get",
	"put":       "Put",
	"delete":    "Delete",
	"list":      "List",
	"if-absent": "PutIfAbsent",
	"cas":       "PutIfMatch",
	"cad":       "DeleteIfMatch",
	"txn":       "Txn",
	"watch":     "WaitChange",
	"stream":    "Stream",
}

// withProbeChecks appends each probe check to the group its area names.
func withProbeChecks(gs []group) []group {
	at := map[string]int{}
	for i, g := range gs {
		at[g.name] = i
	}
	for _, c := range storeprobe.Checks() {
		area, sentence, _ := strings.Cut(c.Name, "/")
		i, ok := at[probeGroups[area]]
		if !ok {
			continue
		}
		gs[i].tests = append(slices.Clip(gs[i].tests), subtest{
			name: sentence,
			need: func(s store.Store) bool { return c.Declared(s.Capabilities()) },
			run:  func(t *testing.T, h Harness) { runProbeCheck(t, h, c.Name) },
		})
	}
	return gs
}

// runProbeCheck runs one probe check against a fresh store and fails the
// test when the check, or the probe's cleanup after it, fails.
func runProbeCheck(t *testing.T, h Harness, name string) {
	ctx, s := h.open(t)
	rep, err := storeprobe.Run(ctx, s, &storeprobe.Options{Prefix: "probe", Timeout: h.timeout(), Checks: []string{name}})
	if err != nil {
		t.Fatalf("storeprobe.Run: %v", err)
	}
	ran := false
	for _, r := range rep.Results {
		ran = ran || r.Check == name
		switch r.Status {
		case storeprobe.Fail:
			t.Errorf("%s: %s", r.Check, r.Detail)
		case storeprobe.Skip:
			t.Errorf("%s: skipped (%s), yet the backend declares what the check needs", r.Check, r.Detail)
		default:
			t.Logf("%s %s %v %s", r.Status, r.Check, r.Latency, r.Detail)
		}
	}
	if !ran {
		t.Errorf("storeprobe did not run %q", name)
	}
}
