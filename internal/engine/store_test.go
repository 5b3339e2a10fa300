package engine

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(tb testing.TB) store.Store {
			e, err := Open(tb.TempDir(), nil)
			if err != nil {
				tb.Fatal(err)
			}
			s := e.Store()
			tb.Cleanup(func() {
				s.Close()
				e.Close()
			})
			return s
		},
	})
}
