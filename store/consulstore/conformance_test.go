package consulstore

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// TestConformance runs the store contract's suite against latchkey's own
// Consul-compatible server, in-process: one test proves both the backend
// and the server.
func TestConformance(t *testing.T) {
	addr := startServer(t, nil)
	storetest.Run(t, storetest.Harness{
		New: func(tb testing.TB) store.Store {
			return openTest(tb, addr, "")
		},
		MaxValueSize: DefaultMaxValueSize,
	})
}
