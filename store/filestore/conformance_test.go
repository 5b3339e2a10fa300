package filestore_test

import (
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/storetest"
)

func harness() storetest.Harness {
	return storetest.Harness{
		New: func(tb testing.TB) store.Store {
			s, err := filestore.Open(tb.TempDir(), nil)
			testutil.Opened(tb, s, err)
			return s
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness())
}

// BenchmarkStore runs the suite's shared benchmarks, for comparison with
// the other backends.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, harness())
}
