package consulstore

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
)

// startServer runs latchkey's server in-process (no fsync) and returns
// the HOST:PORT of its Consul-compatible API. aclToken, when not empty,
// is required on every /v1/ request.
func startServer(t testing.TB, aclToken string) string {
	t.Helper()
	return servertest.Start(t, &servertest.Options{Config: server.Config{ACLToken: aclToken}}).Addr
}

func openTest(t testing.TB, addr, token string) *Store {
	t.Helper()
	s, err := Open(context.Background(), &Options{Address: addr, Prefix: testutil.RandomName("t-"), Token: token})
	testutil.Opened(t, s, err)
	return s
}
