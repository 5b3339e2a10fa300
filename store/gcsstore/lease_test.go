package gcsstore_test

import (
	"testing"

	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
)

// TestLeasesRealTime runs the lease conformance suite over gcsstore
// against fake-gcs-server: no two holders, fencing tokens only go up,
// ambiguous writes resolved — over the JSON API and
// real generation preconditions.
func TestLeasesRealTime(t *testing.T) {
	e := startedEmulator(t)
	leasetest.Run(t, leasetest.Harness{
		New:      func(tb testing.TB) store.Store { return e.open(tb, "") },
		RealTime: true,
	})
}
