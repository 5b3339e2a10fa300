package azblobstore_test

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// TestConformance runs the store conformance suite against Azurite, a
// fresh container per store.
func TestConformance(t *testing.T) {
	u := azurite(t)
	storetest.Run(t, storetest.Harness{
		New:   func(tb testing.TB) store.Store { return open(tb, u) },
		Scale: 0.5,
	})
}
