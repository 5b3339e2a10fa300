package s3store_test

import (
	"testing"

	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
)

// TestLeasesRealTime runs the lease conformance suite over s3store against
// our server: no two holders, fencing tokens only go up, ambiguous writes
// resolved — over real HTTP, real SigV4 and real conditional PUTs.
func TestLeasesRealTime(t *testing.T) {
	p := latchkeyPeer(t)
	leasetest.Run(t, leasetest.Harness{
		New:      func(tb testing.TB) store.Store { return p.open(tb) },
		RealTime: true,
	})
}

// TestLeasesRealTimeVersityGW runs the same suite against Versity Gateway,
// the independent S3 peer.
func TestLeasesRealTimeVersityGW(t *testing.T) {
	p := versityPeer(t)
	leasetest.Run(t, leasetest.Harness{
		New:      func(tb testing.TB) store.Store { return p.open(tb) },
		RealTime: true,
	})
}
