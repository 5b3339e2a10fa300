package memstore_test

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storetest"
)

func harness() storetest.Harness {
	return storetest.Harness{
		New: func(tb testing.TB) store.Store {
			s := memstore.New()
			tb.Cleanup(func() { s.Close() })
			return s
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness())
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, harness())
}
