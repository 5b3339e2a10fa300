package etcdstore

import (
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store/internal/faultproxy"
)

// TestFaultProxyWrites runs every write through faultproxy.CheckWrites
// over a byte pipe in front of the embedded etcd (gRPC is HTTP/2, so the
// faults are at the TCP level): the answer bytes lost with the
// connection after the server applied the request, and the request
// bytes held past Options.RequestTimeout and delivered after another
// writer's Put.
func TestFaultProxyWrites(t *testing.T) {
	pipe := faultproxy.NewTCP(t, endpoint)
	prefix := testutil.RandomName("t-")
	via := openTest(t, &Options{Endpoints: []string{pipe.Addr}, Prefix: prefix, RequestTimeout: 300 * time.Millisecond})
	direct := openTest(t, &Options{Prefix: prefix})
	faultproxy.CheckWrites(t, faultproxy.Writes{Via: via, Direct: direct, Faults: pipe, Settle: 200 * time.Millisecond})
}
