// Package etcdtest starts a real etcd server inside a test's process, for
// the tests of the etcd backend and of the commands that talk to etcd. Like
// internal/testutil it is imported only from _test.go files (internal/
// depcheck checks this); it is a package of its own so that testutil
// stays on the standard library.
package etcdtest

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Start starts a single-member etcd in dir, listening on 127.0.0.1 ports
// the kernel picks, with logging off, no fsync (tests only) and a fast
// election (10 ms ticks, 50 ms elections); tweak, when set, adjusts the
// configuration first. It returns once the member is ready to serve, or an
// error after 30 seconds. The caller closes it.
func Start(dir string, tweak func(*embed.Config)) (*embed.Etcd, error) {
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
		return nil, fmt.Errorf("etcdtest: not ready after 30s")
	}
}

// Endpoint starts an etcd with Start in a directory of tb's, closed when
// tb ends, and returns its client address (HOST:PORT).
func Endpoint(tb testing.TB) string {
	tb.Helper()
	e, err := Start(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e.Clients[0].Addr().String()
}
