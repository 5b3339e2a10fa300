package storeprobe_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storeprobe"
)

const prefix = "probe-test"

func probe(t *testing.T, s store.Store, opts *storeprobe.Options) *storeprobe.Report {
	t.Helper()
	if opts == nil {
		opts = &storeprobe.Options{}
	}
	if opts.Prefix == "" {
		opts.Prefix = prefix
	}
	rep, err := storeprobe.Run(context.Background(), s, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range rep.Results {
		t.Logf("%s %-70s %8v %s", r.Status, r.Check, r.Latency.Round(time.Microsecond), r.Detail)
	}
	return rep
}

// failures returns the failed checks, each mapped to its Broken flag.
func failures(rep *storeprobe.Report) map[string]bool {
	out := map[string]bool{}
	for _, r := range rep.Failed() {
		out[r.Check] = r.Broken
	}
	return out
}

// wantFailed requires exactly the named checks to fail, broken as given.
func wantFailed(t *testing.T, rep *storeprobe.Report, want map[string]bool) {
	t.Helper()
	got := failures(rep)
	for name, b := range want {
		gb, ok := got[name]
		switch {
		case !ok:
			t.Errorf("check %q did not fail", name)
		case gb != b:
			t.Errorf("check %q: Broken = %v, want %v", name, gb, b)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("check %q failed unexpectedly", name)
		}
	}
	if rep.OK() != (len(want) == 0) {
		t.Errorf("OK() = %v with %d failures", rep.OK(), len(want))
	}
}

func result(t *testing.T, rep *storeprobe.Report, check string) storeprobe.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Check == check {
			return r
		}
	}
	t.Fatalf("no result for %q", check)
	return storeprobe.Result{}
}

// requireEmpty requires that the probe left no key in s.
func requireEmpty(t *testing.T, s store.Store) {
	t.Helper()
	page, err := s.List(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Errorf("the probe left %d keys, first %q", len(page.Items), page.Items[0].Key)
	}
}

func TestMemstorePasses(t *testing.T) {
	s := memstore.New()
	rep := probe(t, s, nil)
	wantFailed(t, rep, nil)
	requireEmpty(t, s)
	if r := result(t, rep, "streaming/not declared"); r.Status != storeprobe.Skip {
		t.Errorf("streaming (undeclared by memstore): %s, want SKIP", r.Status)
	}
	for _, name := range []string{"txn/a failing check applies nothing", "watch/WaitChange wakes on a write",
		"cas/concurrent swaps of one version: exactly one winner", "list/sees every key in order across pages"} {
		if r := result(t, rep, name); r.Status != storeprobe.Pass {
			t.Errorf("%s: %s, want PASS", name, r.Status)
		}
	}
	if rep.Prefix != prefix || len(rep.Leftovers) != 0 {
		t.Errorf("prefix %q, leftovers %v", rep.Prefix, rep.Leftovers)
	}
}

func TestFilestorePasses(t *testing.T) {
	s, err := filestore.Open(t.TempDir(), nil)
	testutil.Opened(t, s, err)
	rep := probe(t, s, nil)
	wantFailed(t, rep, nil)
	requireEmpty(t, s)
	if r := result(t, rep, "stream/put and get round trip"); r.Status != storeprobe.Pass {
		t.Errorf("stream: %s, want PASS", r.Status)
	}
}

func TestIgnoredPutConditionsAreBroken(t *testing.T) {
	rep := probe(t, &ignoringStore{Store: memstore.New(), puts: true}, nil)
	wantFailed(t, rep, map[string]bool{
		"if-absent/second create returns ErrConflict and keeps the value": true,
		"if-absent/concurrent creates of one key: exactly one winner":     true,
		"cas/stale version returns ErrConflict and keeps the value":       true,
		"cas/missing key returns ErrConflict":                             true,
		"cas/rewrite of identical bytes gets a new version (ABA)":         true,
		"cas/deleted and recreated key refuses the old version":           true,
		"cas/concurrent swaps of one version: exactly one winner":         true,
	})
	r := result(t, rep, "if-absent/second create returns ErrConflict and keeps the value")
	if !strings.Contains(r.Detail, "BROKEN") || !strings.Contains(r.Detail, "succeeded") {
		t.Errorf("detail %q does not say the second create succeeded", r.Detail)
	}
}

func TestIgnoredDeleteConditionsAreBroken(t *testing.T) {
	rep := probe(t, &ignoringStore{Store: memstore.New(), deletes: true}, nil)
	wantFailed(t, rep, map[string]bool{
		"cad/stale version returns ErrConflict and keeps the key": true,
		"cad/missing key returns ErrConflict":                     true,
		"cas/deleted and recreated key refuses the old version":   true,
	})
}

func TestContentVersionsAreBroken(t *testing.T) {
	s := newETagStore()
	rep := probe(t, s, nil)
	wantFailed(t, rep, map[string]bool{
		"cas/rewrite of identical bytes gets a new version (ABA)": true,
		"cas/deleted and recreated key refuses the old version":   true,
	})
	requireEmpty(t, s)
}

// A store with content versions (S3's ETags) that declares no
// UniqueVersions passes: the ABA checks become one SKIP row saying why.
func TestContentVersionsDeclared(t *testing.T) {
	s := newETagStore()
	rep := probe(t, declaring{s, store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true}}, nil)
	wantFailed(t, rep, nil)
	if r := result(t, rep, storeprobe.CapUniqueVersions+"/not declared"); r.Status != storeprobe.Skip || !strings.Contains(r.Detail, "A→B→A") {
		t.Errorf("unique-versions: %s %q; want SKIP saying what is lost", r.Status, r.Detail)
	}
	requireEmpty(t, s)
}

func TestDeclaredButMissingInterfaces(t *testing.T) {
	caps := store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true,
		Transactions: true, Watch: true, Streaming: true}
	rep := probe(t, declaring{memstore.New(), caps}, nil)
	wantFailed(t, rep, map[string]bool{
		"txn/a failing check applies nothing": false,
		"txn/all operations apply together":   false,
		"watch/WaitChange wakes on a write":   false,
		"stream/put and get round trip":       false,
	})
}

func TestUndeclaredCapabilities(t *testing.T) {
	t.Run("refused with ErrUnsupported", func(t *testing.T) {
		rep := probe(t, refusingStore{memstore.New()}, nil)
		wantFailed(t, rep, nil)
		for _, c := range []string{storeprobe.CapCreateIfAbsent, storeprobe.CapCompareAndSwap, storeprobe.CapCompareAndDelete} {
			r := result(t, rep, c+"/not declared")
			if r.Status != storeprobe.Skip || !strings.Contains(r.Detail, "refused with ErrUnsupported") {
				t.Errorf("%s: %s %q; want SKIP, refused", c, r.Status, r.Detail)
			}
		}
		if n := len(rep.Results); n != 4+7+1 {
			// 4 basic checks, one row per undeclared capability, cleanup
			t.Errorf("%d results; want one row per undeclared capability", n)
		}
	})
	t.Run("accepted", func(t *testing.T) {
		s := memstore.New()
		rep := probe(t, declaring{s, store.Capabilities{}}, nil)
		wantFailed(t, rep, nil)
		r := result(t, rep, "compare-and-swap/not declared")
		if !strings.Contains(r.Detail, "not ErrUnsupported") {
			t.Errorf("detail %q; want it to say the stale if-match was not refused with ErrUnsupported", r.Detail)
		}
		r = result(t, rep, "create-if-absent/not declared")
		if !strings.Contains(r.Detail, "was accepted") {
			t.Errorf("detail %q; want it to say the if-absent put was accepted", r.Detail)
		}
		requireEmpty(t, s)
	})
}

func TestUnexpectedErrorsFailWithoutBroken(t *testing.T) {
	s := faultstore.New(memstore.New(), 1)
	s.Inject(faultstore.Rule{Ops: faultstore.OpGet, Prefix: prefix + "/get-missing"})
	rep := probe(t, s, nil)
	wantFailed(t, rep, map[string]bool{"get/missing key returns ErrNotFound": false})
	if r := result(t, rep, "get/missing key returns ErrNotFound"); !strings.Contains(r.Detail, "transient") {
		t.Errorf("detail %q does not carry the store's error", r.Detail)
	}
}

func TestRaceToleratesUnknownOutcomes(t *testing.T) {
	s := faultstore.New(memstore.New(), 1)
	s.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: prefix + "/if-absent-race/", Fault: faultstore.ApplyThenFail, Count: 8})
	rep := probe(t, s, nil)
	wantFailed(t, rep, nil)
	r := result(t, rep, "if-absent/concurrent creates of one key: exactly one winner")
	if !strings.Contains(r.Detail, "unknown") {
		t.Errorf("detail %q; want the unknown outcomes counted", r.Detail)
	}
}

func TestLeftoversReported(t *testing.T) {
	s := faultstore.New(memstore.New(), 1)
	s.Inject(faultstore.Rule{Ops: faultstore.OpDelete, Prefix: prefix + "/put/"})
	rep := probe(t, s, nil)
	wantFailed(t, rep, map[string]bool{"cleanup/every probe key removed": false})
	if !slices.Equal(rep.Leftovers, []string{prefix + "/put/k"}) {
		t.Errorf("leftovers %q; want [%s/put/k]", rep.Leftovers, prefix)
	}
}

func TestPrefixInUse(t *testing.T) {
	s := memstore.New()
	if _, err := s.Put(context.Background(), prefix+"/mine", []byte("x"), store.Unconditional); err != nil {
		t.Fatal(err)
	}
	_, err := storeprobe.Run(context.Background(), s, &storeprobe.Options{Prefix: prefix + "/"})
	if !errors.Is(err, storeprobe.ErrPrefixInUse) {
		t.Fatalf("Run on a used prefix: %v; want ErrPrefixInUse", err)
	}
	e, err := s.Get(context.Background(), prefix+"/mine")
	if err != nil || string(e.Value) != "x" {
		t.Fatalf("the existing key was touched: %q, %v", e.Value, err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []storeprobe.Options{{Prefix: "a//b"}, {Racers: 1}, {Racers: -1}, {OpTimeout: -1}, {Timeout: -1}, {CleanupTimeout: -1}, {WatchTimeout: -1}, {Checks: []string{"get/no such check"}}} {
		if _, err := storeprobe.Run(context.Background(), memstore.New(), &o); err == nil {
			t.Errorf("Run(%+v) succeeded", o)
		}
	}
}

func TestDefaultPrefixIsFresh(t *testing.T) {
	a, b := storeprobe.DefaultPrefix(), storeprobe.DefaultPrefix()
	if a == b || !strings.HasPrefix(a, "latchkey-probe/") || store.ValidateKey(a) != nil {
		t.Fatalf("DefaultPrefix: %q, %q", a, b)
	}
}

// A store that hangs fails the check at OpTimeout, and the run goes on.
func TestEveryCallIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := hangingStore{Store: memstore.New(), hang: "/get-missing"}
		start := time.Now()
		rep := probe(t, s, &storeprobe.Options{OpTimeout: 3 * time.Second})
		wantFailed(t, rep, map[string]bool{"get/missing key returns ErrNotFound": false})
		if r := result(t, rep, "get/missing key returns ErrNotFound"); r.Latency != 3*time.Second {
			t.Errorf("hanging check took %v; want the 3s op timeout", r.Latency)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("run took %v (fake clock)", d)
		}
	})
}

// Checks that do not start before the total timeout fail as not run.
func TestTotalTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := hangingStore{Store: memstore.New(), hang: "/get-missing"}
		rep := probe(t, s, &storeprobe.Options{OpTimeout: time.Hour, Timeout: time.Minute})
		var notRun int
		for _, r := range rep.Failed() {
			if strings.Contains(r.Detail, "not run") {
				notRun++
			}
		}
		if notRun == 0 || result(t, rep, "cleanup/every probe key removed").Status != storeprobe.Pass {
			t.Errorf("%d checks not run after the time limit; cleanup %v", notRun, result(t, rep, "cleanup/every probe key removed"))
		}
	})
}

func TestCleanupRetriesTransientDeletes(t *testing.T) {
	s := faultstore.New(memstore.New(), 1)
	s.Inject(faultstore.Rule{Ops: faultstore.OpDelete, Prefix: prefix + "/put/", Count: 2})
	rep := probe(t, s, nil)
	wantFailed(t, rep, nil)
	if s.Injected() != 2 {
		t.Fatalf("%d faults injected; want the 2 transient cleanup deletes", s.Injected())
	}
	requireEmpty(t, s)
}

// Options.Checks runs the named checks alone, then cleanup.
func TestChecksOption(t *testing.T) {
	s := memstore.New()
	names := []string{"cad/current version deletes", "get/missing key returns ErrNotFound", "stream/put and get round trip"}
	rep := probe(t, s, &storeprobe.Options{Checks: names})
	wantFailed(t, rep, nil)
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Check)
	}
	// In Run's order; memstore does not stream, so that check is the
	// capability's one SKIP row.
	want := []string{"get/missing key returns ErrNotFound", "cad/current version deletes", "streaming/not declared", "cleanup/every probe key removed"}
	if !slices.Equal(got, want) {
		t.Errorf("results %q; want %q", got, want)
	}
	requireEmpty(t, s)
}

func TestCheckNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range storeprobe.Checks() {
		if seen[c.Name] || !strings.Contains(c.Name, "/") {
			t.Errorf("check %q: a duplicate, or not <area>/<sentence>", c.Name)
		}
		seen[c.Name] = true
	}
}
