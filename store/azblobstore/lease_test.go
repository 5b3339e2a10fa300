package azblobstore_test

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/azblobstore"
)

// TestLeasesRealTime runs the lease conformance suite over azblobstore
// against Azurite: no two holders, fencing tokens only go up, ambiguous
// writes resolved — over real HTTP, shared-key auth and real conditional
// Put Blob. One container serves every subtest, each store under its own
// random prefix.
func TestLeasesRealTime(t *testing.T) {
	u := azurite(t)
	c := newContainer(t, u)
	leasetest.Run(t, leasetest.Harness{
		New: func(tb testing.TB) store.Store {
			s, err := azblobstore.Open(context.Background(), options(u, c, testutil.RandomName("lease-")))
			if err != nil {
				tb.Fatal(err)
			}
			return s // the suite closes it
		},
		RealTime: true,
	})
}
