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
	addr := startServer(t, "")
	storetest.Run(t, storetest.Harness{
		New: func(tb testing.TB) store.Store {
			return openTest(tb, addr, "")
		},
		MaxValueSize: DefaultMaxValueSize,
		// Every call is an HTTP round trip with an fsync-free engine
		// behind it, and List reads the whole prefix per page (Consul
		// cannot page): half the randomized counts keep the package
		// under ~30s with -race on a loaded 2-core CI machine. Every
		// subtest still runs, above the suite's floors.
		Scale: 0.5,
	})
}
