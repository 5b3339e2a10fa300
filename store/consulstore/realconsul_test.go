package consulstore_test

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// realConsul is the HOST:PORT of a real Consul agent to test against
// (testutil.Peer: without it the tests skip, and fail under CI=true).
func realConsul(t *testing.T) string {
	t.Helper()
	return testutil.Peer(t, "LATCHKEY_TEST_CONSUL", "the HOST:PORT of a real Consul agent (.ci/run starts a 1.16.3 dev agent)")
}

func openReal(tb testing.TB, addr string) store.Store {
	s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: addr, Prefix: testutil.RandomName("latchkey-test-")})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestConformanceRealConsul runs the store contract's suite against a real
// Consul agent: what our server imitates, checked at the source.
func TestConformanceRealConsul(t *testing.T) {
	addr := realConsul(t)
	storetest.Run(t, storetest.Harness{
		New: func(tb testing.TB) store.Store {
			s := openReal(tb, addr)
			tb.Cleanup(func() { s.Close() })
			return s
		},
		MaxValueSize: consulstore.DefaultMaxValueSize,
		Scale:        0.5,
	})
}

// TestLeasesRealConsul runs the lease conformance suite against a real
// Consul agent, whose per-client connection limit (200) the suite's many
// stores and waiters used to exceed (429 in TryAcquire and the
// ambiguous-outcome subtests).
func TestLeasesRealConsul(t *testing.T) {
	addr := realConsul(t)
	leasetest.Run(t, leasetest.Harness{
		New:      func(tb testing.TB) store.Store { return openReal(tb, addr) }, // the suite closes it
		RealTime: true,
	})
}
