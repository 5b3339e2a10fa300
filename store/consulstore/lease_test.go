package consulstore_test

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// TestLeasesRealTime runs the lease conformance suite through consulstore
// against latchkey's own server (the full server wiring, in-process): no
// two holders, fencing tokens only go up, ambiguous writes resolved, and
// waiting on Consul blocking queries as the native watch — over real HTTP
// and real check-and-set. One server serves every subtest, each under its
// own key prefix; the subtests run in parallel on the real clock.
func TestLeasesRealTime(t *testing.T) {
	srv := servertest.Start(t, nil)
	leasetest.Run(t, leasetest.Harness{
		New: func(tb testing.TB) store.Store {
			s, err := consulstore.Open(context.Background(), &consulstore.Options{
				Address: srv.Addr, Prefix: testutil.RandomName("lease-")})
			if err != nil {
				tb.Fatal(err)
			}
			return s // the suite closes it
		},
		RealTime: true,
	})
}
