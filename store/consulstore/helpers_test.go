package consulstore

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/latchkey/latchkey/internal/consulapi"
	"github.com/latchkey/latchkey/internal/engine"
	"github.com/latchkey/latchkey/internal/testutil"
)

// startServer runs latchkey's Consul-compatible API in-process (engine
// without fsync + consulapi handler) and returns its HOST:PORT.
func startServer(t testing.TB, opts *consulapi.Options) string {
	t.Helper()
	e, err := engine.Open(t.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &consulapi.Options{}
	}
	opts.NodeName = "consulstore-test"
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := consulapi.New(e, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		e.Close()
	})
	return testutil.Serve(t, h).Listener.Addr().String()
}

func openTest(t testing.TB, addr, token string) *Store {
	t.Helper()
	s, err := Open(context.Background(), &Options{Address: addr, Prefix: testutil.RandomName("t-"), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
