package engine

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// harness opens a fresh durable engine (fsync on) per store.
func harness() storetest.Harness {
	return storetest.Harness{
		New: func(tb testing.TB) store.Store {
			e, err := Open(tb.TempDir(), nil)
			if err != nil {
				tb.Fatal(err)
			}
			s := e.Store(rawCodec{})
			tb.Cleanup(func() {
				s.Close()
				e.Close()
			})
			return s
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, harness()) }

func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness()) }
