package gcsstore_test

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// TestConformance runs the store conformance suite against
// fake-gcs-server over its JSON API. CompareAndDelete is not
// claimed for this peer (it ignores delete preconditions), so the suite
// checks that Delete with IfMatch fails with ErrUnsupported instead.
func TestConformance(t *testing.T) {
	e := startedEmulator(t)
	storetest.Run(t, storetest.Harness{
		// Full scale: the emulator is on loopback and the suite takes a
		// few seconds with -race.
		New: func(tb testing.TB) store.Store { return e.open(tb, "") },
	})
}
