package consulstore

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/internal/consulapi"
	"github.com/latchkey/latchkey/internal/engine"
	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

// TestConcurrentCallersReuseConnections: 32 goroutines sharing one Store
// reuse their connections round after round. consul/api's default
// transport keeps only GOMAXPROCS+1 idle connections per host, so with
// more callers than that most requests opened a new connection and left
// a TIME_WAIT socket behind (about half of all requests under cas.Update
// on a hot key).
func TestConcurrentCallersReuseConnections(t *testing.T) {
	e, err := engine.Open(t.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h, err := consulapi.New(e, &consulapi.Options{NodeName: "conns", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	s, err := Open(context.Background(), &Options{Address: strings.TrimPrefix(srv.URL, "http://"), Prefix: testutil.RandomName("t-")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const callers, rounds = 32, 20
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range rounds {
				if _, err := s.Put(t.Context(), "k", []byte("v"), store.Unconditional); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := opened.Load(); n > 2*callers {
		t.Errorf("%d callers × %d requests opened %d connections; want them reused (at most %d)", callers, rounds, n, 2*callers)
	}
}
