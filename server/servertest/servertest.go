// Package servertest runs a latchkey server in-process for tests: on
// 127.0.0.1 with a random port and a temporary data directory, stopped
// (gracefully) by t.Cleanup.
//
//	srv := servertest.Start(t, nil)
//	cfg := consulapi.DefaultConfig(); cfg.Address = srv.Addr        // Consul client
//	s3client := s3.New(s3.Options{BaseEndpoint: &srv.URL, ...})     // S3 client, srv.AccessKey/SecretKey
//
// fsync is off by default (a test cannot lose power, and it keeps tests
// fast); set Options.Durable for tests that need it. Tests that kill a
// server process use the real binary instead (see server's
// durability test).
package servertest

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// Test credentials used when Options leave them empty.
const (
	AccessKey = "LATCHKEYTESTACCESSKEY"
	SecretKey = "latchkey-test-secret-key-0123456789abcdef"
)

// Options tune Start. The zero value (or nil) is a fresh server with the
// test credentials above, no ACL token and no fsync.
type Options struct {
	// Config is the server configuration. DataDir defaults to t.TempDir(),
	// Listen is always 127.0.0.1:0, AccessKey/SecretKey default to the
	// test constants, Logger to a discarding logger.
	Config server.Config
	// Durable keeps fsync on.
	Durable bool
	// WrapListener, when set, wraps the server's listener (to count or
	// disturb connections).
	WrapListener func(net.Listener) net.Listener
}

// Server is a running test server.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234" (no trailing
	// slash): S3 endpoint and Consul address in one.
	URL string
	// Addr is HOST:PORT, e.g. for consul/api's Config.Address.
	Addr string
	// DataDir is the server's data directory.
	DataDir string
	// AccessKey and SecretKey are the S3 credentials.
	AccessKey, SecretKey string
	// Server is the server itself (Engine(), Handler()).
	Server *server.Server

	stop func() error
}

// Engine is the server's engine.
func (s *Server) Engine() *engine.Engine { return s.Server.Engine() }

// Stop shuts the server down gracefully and waits; the data directory is
// released. It is idempotent and also runs at cleanup.
func (s *Server) Stop() error { return s.stop() }

// Start starts a server and registers its shutdown with t.Cleanup. It
// fails the test if the server cannot start.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	cfg := o.Config
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Listen = "127.0.0.1:0"
	if cfg.AccessKey == "" && cfg.SecretKey == "" {
		cfg.AccessKey, cfg.SecretKey = AccessKey, SecretKey
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.NoSync = !o.Durable
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		srv.Close()
		t.Fatalf("servertest: listen: %v", err)
	}
	if o.WrapListener != nil {
		ln = o.WrapListener(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var stopErr error
	s := &Server{
		URL:       srv.Scheme() + "://" + ln.Addr().String(),
		Addr:      ln.Addr().String(),
		DataDir:   cfg.DataDir,
		AccessKey: cfg.AccessKey,
		SecretKey: cfg.SecretKey,
		Server:    srv,
	}
	s.stop = func() error {
		once.Do(func() {
			cancel()
			stopErr = <-done
		})
		return stopErr
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("servertest: shutdown: %v", err)
		}
	})
	return s
}
