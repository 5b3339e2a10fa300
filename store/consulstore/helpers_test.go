package consulstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/latchkey/latchkey/internal/consulapi"
	"github.com/latchkey/latchkey/internal/engine"
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
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		h.Close()
		e.Close()
	})
	return srv.Listener.Addr().String()
}

func randomPrefix() string {
	var b [6]byte
	rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}

func openTest(t testing.TB, addr, token string) *Store {
	t.Helper()
	s, err := Open(context.Background(), &Options{Address: addr, Prefix: randomPrefix(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
