package azblobstore_test

import (
	"os"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// BenchmarkStore runs the standard store benchmarks against Azurite (in
// memory, on loopback), a fresh container per sub-benchmark:
//
//	LATCHKEY_TEST_AZURITE=http://127.0.0.1:10000/devstoreaccount1 \
//	  go test -run '^$' -bench Store ./store/azblobstore/
func BenchmarkStore(b *testing.B) {
	if os.Getenv(azuriteEnv) == "" {
		b.Skip(azuriteEnv + " not set: no Azurite to measure")
	}
	u := azurite(b)
	storetest.Bench(b, storetest.Harness{New: func(tb testing.TB) store.Store { return open(tb, u) }})
}
