// Package storetest is the public conformance suite of the store contract.
//
// Every backend runs it from its own test, with a harness of a few lines:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			New: func(tb testing.TB) store.Store {
//				s := memstore.New()
//				tb.Cleanup(func() { s.Close() })
//				return s
//			},
//		})
//	}
//
// Each obligation written in the doc comments of package store becomes a
// subtest named like the sentence ("PutIfMatch/stale version returns
// ErrConflict"). The obligations `latchkey probe` also checks on a live
// store are defined once, as the checks of store/storeprobe, and run here
// as subtests of the groups their areas name ("cas/…" in PutIfMatch), so
// the probe and the suite cannot drift apart. On top of those the suite
// runs races where exactly one of
// many writers may win, concurrent compare-and-swap increments that must sum
// exactly, versions held across deletes that must never match again (no
// ABA), random operation sequences checked against a reference model, a
// linearizability check of concurrent histories (porcupine; a write of
// unknown outcome counts as one that may have happened, at any time after
// its call), transactions (racing each other, racing single-key writes on
// one version, and never seen in part by readers), watches and streams
// where the backend declares them, and unknown-outcome injection through
// store/faultstore.
//
// Subtests that need a capability run only when the backend declares it;
// when it does not, the suite checks instead that the operation fails with
// store.ErrUnsupported. Nothing is skipped with t.Skip.
//
// Randomized subtests print their seed; a failure names the seed and the
// operation index. Rerun with -storetest.seed=N (after -args when go test
// is given packages) or LATCHKEY_STORETEST_SEED=N.
//
// Bench runs the same Put, Get and CAS benchmarks on every backend.
// WriteKeys, ListAll and Keys are the suite's own listing helpers, for a
// backend's paging tests of its own.
package storetest

import (
	"context"
	"crypto/rand"
	"flag"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// Harness describes a backend to the suite.
type Harness struct {
	// New returns a store with no keys: a fresh store, or the same
	// backend scoped to a fresh random key prefix when several stores
	// share one server. Every subtest calls New once or more. New
	// releases what it opened with tb.Cleanup; the suite may Close a
	// store itself, so a second Close must not panic. Required.
	New func(tb testing.TB) store.Store

	// Scale multiplies the operation counts of the randomized, race and
	// linearizability subtests. Zero means 1; a backend behind a network
	// may pass 0.5. The counts never fall below a floor that still
	// makes each check meaningful.
	Scale float64

	// MaxValueSize is the largest value the backend stores (Consul's
	// default is 512 KiB). Zero means no limit below the suite's largest
	// value, 1 MiB.
	MaxValueSize int

	// Timeout bounds each subtest. Zero means 60 seconds.
	Timeout time.Duration
}

var seedFlag = flag.Int64("storetest.seed", 0, "seed of the randomized storetest subtests (0: LATCHKEY_STORETEST_SEED or random)")

// seed returns the seed for randomized subtests: the flag, then the
// environment, then a fresh random one.
func seed() int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("LATCHKEY_STORETEST_SEED"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n != 0 {
			return n
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	n := int64(0)
	for _, c := range b {
		n = n<<8 | int64(c)
	}
	if n < 0 {
		n = -n
	}
	if n == 0 {
		n = 1
	}
	return n
}

// scaled returns n times the harness's scale, at least floor.
func (h Harness) scaled(n, floor int) int {
	sc := h.Scale
	if sc <= 0 {
		sc = 1
	}
	m := int(float64(n) * sc)
	if m < floor {
		m = floor
	}
	return m
}

func (h Harness) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 60 * time.Second
}

// open returns a fresh store and a context bounded by the harness timeout.
func (h Harness) open(t *testing.T) (context.Context, store.Store) {
	t.Helper()
	s := h.New(t)
	if s == nil {
		t.Fatal("storetest: Harness.New returned nil")
	}
	ctx, cancel := context.WithTimeout(t.Context(), h.timeout())
	t.Cleanup(cancel)
	return ctx, s
}

// openAs is open for a subtest of an optional interface T (a
// store.Transactor, Watcher or Streamer): the backend declared the
// capability named by capability, so its store must implement T.
func openAs[T any](t *testing.T, h Harness, capability string) (context.Context, store.Store, T) {
	t.Helper()
	ctx, s := h.open(t)
	x, ok := s.(T)
	if !ok {
		t.Fatalf("%T declares %s but is not a %s", s, capability, reflect.TypeFor[T]())
	}
	return ctx, s, x
}

// group is a named list of subtests: one obligation area of the contract.
type group struct {
	name  string
	tests []subtest
}

// groups returns every subtest of the suite, with the checks of
// store/storeprobe in the groups their areas name.
func groups() []group {
	return withProbeChecks([]group{
		{"Get", getTests},
		{"Put", putTests},
		{"PutIfAbsent", putIfAbsentTests},
		{"PutIfMatch", putIfMatchTests},
		{"Delete", deleteTests},
		{"DeleteIfMatch", deleteIfMatchTests},
		{"Versions", versionTests},
		{"Keys", keyTests},
		{"Values", valueTests},
		{"List", listTests},
		{"Context", contextTests},
		{"Capabilities", capabilityTests},
		{"Race", raceTests},
		{"Model", modelTests},
		{"Linearizability", linearTests},
		{"UnknownOutcome", faultTests},
		{"Txn", txnTests},
		{"WaitChange", watchTests},
		{"Stream", streamTests},
		{"Close", closeTests},
	})
}

type subtest struct {
	name string
	need func(store.Store) bool // nil: always; called on a probe store
	run  func(t *testing.T, h Harness)
}

// Run runs the whole suite against the backend h describes.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	probe := h.New(t)
	caps := probe.Capabilities()
	t.Logf("storetest: capabilities %+v", caps)
	_, isTxn := probe.(store.Transactor)
	_, isWatch := probe.(store.Watcher)
	if caps.Transactions && !isTxn {
		t.Errorf("storetest: Capabilities().Transactions is set but %T does not implement store.Transactor", probe)
	}
	if caps.Watch && !isWatch {
		t.Errorf("storetest: Capabilities().Watch is set but %T does not implement store.Watcher", probe)
	}
	for _, g := range groups() {
		var run []subtest
		for _, st := range g.tests {
			if st.need == nil || st.need(probe) {
				run = append(run, st)
			}
		}
		if len(run) == 0 {
			t.Logf("storetest: %s: no subtest applies to this backend's capabilities", g.name)
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			for _, st := range run {
				t.Run(st.name, func(t *testing.T) { st.run(t, h) })
			}
		})
	}
}

func hasCreate(s store.Store) bool { return s.Capabilities().CreateIfAbsent }
func hasCAS(s store.Store) bool    { return s.Capabilities().CompareAndSwap }
func hasCAD(s store.Store) bool    { return s.Capabilities().CompareAndDelete }

func hasTxn(s store.Store) bool {
	_, ok := s.(store.Transactor)
	return ok && s.Capabilities().Transactions
}

func hasWatch(s store.Store) bool {
	_, ok := s.(store.Watcher)
	return ok && s.Capabilities().Watch
}
