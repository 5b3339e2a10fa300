package lease_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// TestConsulstoreRealTime runs the suite over the network against
// latchkey's own server, in-process, through the Consul KV backend, whose
// blocking queries are the native watch Acquire waits on.
func TestConsulstoreRealTime(t *testing.T) {
	srv := servertest.Start(t, nil)
	leasetest.Run(t, leasetest.Harness{
		New: func(tb testing.TB) store.Store {
			var b [6]byte
			rand.Read(b[:])
			s, err := consulstore.Open(context.Background(), &consulstore.Options{
				Address: srv.Addr, Prefix: "lease-" + hex.EncodeToString(b[:])})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		RealTime: true,
	})
}
