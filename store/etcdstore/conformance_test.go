package etcdstore

import (
	"testing"

	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

func harness() storetest.Harness {
	return storetest.Harness{
		New:          func(tb testing.TB) store.Store { return openTest(tb, nil) },
		MaxValueSize: DefaultMaxValueSize,
	}
}

// TestConformance runs the store contract's suite against a real etcd,
// in-process: races, CAS counters, the reference model, linearizability,
// transactions and watches, each on a fresh key prefix.
func TestConformance(t *testing.T) {
	storetest.Run(t, harness())
}

// TestLeasesRealTime runs the lease conformance suite over etcdstore: no
// two holders, fencing tokens only go up, ambiguous writes resolved, and
// waiters woken by the etcd watch.
func TestLeasesRealTime(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{
		New:      func(tb testing.TB) store.Store { return openTest(tb, nil) },
		RealTime: true,
	})
}

func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness()) }
