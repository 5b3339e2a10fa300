package consulstore

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
)

// TestConcurrentCallersReuseConnections: 32 goroutines sharing one Store
// reuse their connections round after round. consul/api's default
// transport keeps only GOMAXPROCS+1 idle connections per host, so with
// more callers than that most requests opened a new connection and left
// a TIME_WAIT socket behind (about half of all requests under cas.Update
// on a hot key).
func TestConcurrentCallersReuseConnections(t *testing.T) {
	var opened atomic.Int64
	srv := servertest.Start(t, &servertest.Options{WrapListener: func(ln net.Listener) net.Listener {
		return countingListener{ln, &opened}
	}})
	s, err := Open(context.Background(), &Options{Address: srv.Addr, Prefix: testutil.RandomName("t-")})
	testutil.Opened(t, s, err)
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

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
