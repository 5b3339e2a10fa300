package etcdstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/latchkey/latchkey/internal/testutil"
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
	e, err := startEtcd(dir, func(cfg *embed.Config) {
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

// startEtcd starts a single-member etcd in dir, listening on 127.0.0.1
// only, with logging off, no fsync (tests only) and a fast election;
// tweak, when set, adjusts the configuration first.
func startEtcd(dir string, tweak func(*embed.Config)) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	u, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*u}, []url.URL{*u}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*u}, []url.URL{*u}
	cfg.InitialCluster = cfg.Name + "=" + u.String()
	cfg.UnsafeNoFsync = true
	cfg.TickMs, cfg.ElectionMs = 10, 50
	if tweak != nil {
		tweak(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 30s")
	}
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
