package etcdstore

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/internal/testutil/etcdtest"
)

// endpoint is the client address (HOST:PORT, loopback) of the embedded
// etcd that TestMain starts for the whole package.
var endpoint string

// TestMain starts one real etcd server in-process, on loopback ports the
// kernel picks, with a temporary data directory; every test scopes its
// stores to a fresh random prefix on it. It runs without fsync unless
// LATCHKEY_TEST_ETCD_FSYNC=1 (for benchmarks of durable writes).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etcdstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	e, err := etcdtest.Start(dir, func(cfg *embed.Config) {
		cfg.UnsafeNoFsync = os.Getenv("LATCHKEY_TEST_ETCD_FSYNC") != "1"
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdstore: start embedded etcd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	endpoint = e.Clients[0].Addr().String()
	code := m.Run()
	e.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// openTest opens a store on the package's etcd under a fresh prefix,
// closed when tb ends.
func openTest(tb testing.TB, opts *Options) *Store {
	tb.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(o.Endpoints) == 0 {
		o.Endpoints = []string{endpoint}
	}
	if o.Prefix == "" {
		o.Prefix = testutil.RandomName("t-")
	}
	s, err := Open(context.Background(), &o)
	testutil.Opened(tb, s, err)
	return s
}
