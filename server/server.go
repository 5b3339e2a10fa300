package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

// ErrDataDirInUse is the error New and Run return (wrapped) when another
// latchkey server, in this process or another, holds the data directory.
// It is the engine's ErrLocked, so callers need not import the engine.
var ErrDataDirInUse = engine.ErrLocked

// Server is one running latchkey server: an open engine and its handlers.
type Server struct {
	cfg     Config
	tls     *tls.Config // nil: plain HTTP
	engine  *engine.Engine
	apis    *apis
	metrics *metrics
	handler http.Handler
	log     *slog.Logger
}

// New opens the data directory (failing with an error matching
// ErrDataDirInUse when another server holds it) and builds the handlers.
// Serve it with Serve; Close it if Serve is never called.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("server: TLS certificate: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	m := newMetrics()
	e, err := engine.Open(cfg.DataDir, &engine.Options{
		OnCommit:  m.onCommit,
		LiveBlobs: s3api.LiveBlobs,
		NoSync:    cfg.NoSync,
		Logger:    cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	m.engine(e)
	a, err := newAPIs(e, cfg)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	if a.consulStats != nil {
		m.consul(a.consulStats)
	}
	s := &Server{cfg: cfg, tls: tlsCfg, engine: e, apis: a, metrics: m, log: cfg.Logger}
	s.handler = &router{
		consul:   m.instrument("consul", a.consul, cfg.Logger, cfg.LogRequests),
		s3:       m.instrument("s3", a.s3, cfg.Logger, cfg.LogRequests),
		ops:      m.instrument("ops", s.opsHandler(), cfg.Logger, cfg.LogRequests),
		s3Domain: cfg.S3Domain,
		hosts:    newHostGuard(cfg),
	}
	return s, nil
}

// Engine is the server's engine.
func (s *Server) Engine() *engine.Engine { return s.engine }

// Config is the server's configuration with defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Handler is the server's whole HTTP surface, for tests that bring their
// own listener (httptest.NewServer(s.Handler())).
func (s *Server) Handler() http.Handler { return s.handler }

// Scheme is "https" with a TLS certificate, else "http".
func (s *Server) Scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, ends Consul blocking queries (they answer with the current
// state), lets every other request in flight finish for up to
// ShutdownTimeout, then cancels and closes whatever is left, and closes the
// handlers and the engine. A write in flight is therefore either completed
// and acknowledged or fails before its commit; none is cut off between
// commit and answer by the shutdown itself. It returns nil after a clean
// shutdown. The Server cannot be reused.
//
// Serve refuses (closing ln and the Server) a listener that is not loopback
// when there is no ACLToken, unless ConsulAnonymous is set.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := checkExposure(s.cfg, ln.Addr()); err != nil {
		ln.Close()
		s.Close()
		return err
	}
	if s.cfg.ACLToken == "" && !isLoopback(ln.Addr()) {
		s.log.Warn("the Consul KV API is open to anyone who can reach this address (--consul-anonymous)",
			"listen", ln.Addr().String())
	}
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	connState := connLimit(s.cfg.MaxConnsPerClient)
	hs := &http.Server{
		Handler:           s.handler,
		ConnState:         connState,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	errc := make(chan error, 1)
	go func() {
		if s.tls != nil {
			hs.TLSConfig = s.tls
			errc <- hs.ServeTLS(ln, "", "")
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		s.log.Info("shutting down", "listen", ln.Addr().String())
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		s.apis.stopBlocking() // Consul blocking queries answer now
		if err := hs.Shutdown(sctx); err != nil {
			s.log.Warn("requests still running after the shutdown timeout; cancelling them",
				"timeout", s.cfg.ShutdownTimeout, "err", err)
			cancelBase()
			hs.Close()
		}
		cancel()
		serveErr = <-errc
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	if err := s.Close(); serveErr == nil {
		serveErr = err
	}
	if serveErr == nil {
		s.log.Info("stopped", "index", s.engine.Index())
	}
	return serveErr
}

// Close closes the handlers and the engine, releasing the data directory.
// Serve calls it; call it yourself only when not serving.
func (s *Server) Close() error {
	var errs []error
	for _, c := range s.apis.closers {
		errs = append(errs, c.Close())
	}
	errs = append(errs, s.engine.Close())
	return errors.Join(errs...)
}

// Run listens on cfg.Listen, prints one line saying where to stdout (and
// the S3 client's settings to cfg.Notices), and serves until ctx ends (see
// Serve). It binds the listener before it creates or opens anything in the
// data directory, so a bad or busy address leaves no trace there.
func Run(ctx context.Context, cfg Config, stdout io.Writer) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	// Refuse an exposed listener before binding (Serve checks the bound
	// address again).
	if addr, err := net.ResolveTCPAddr("tcp", cfg.Listen); err == nil {
		if err := checkExposure(cfg, addr); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		// Two servers on one directory and port: the directory in use is
		// the more useful message.
		if err := dirInUse(cfg.DataDir); err != nil {
			return fmt.Errorf("server: %w", err)
		}
		return fmt.Errorf("server: listen: %w", err)
	}
	s, err := New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	// The log line first: whoever waits for the startup line (a script,
	// a test) then finds the mode it runs in already logged.
	s.log.Info("serving", "listen", ln.Addr().String(), "data_dir", s.cfg.DataDir,
		"tls", s.cfg.TLSCert != "", "fsync", !s.cfg.NoSync, "durability", s.engine.Mode(), "index", s.engine.Index(),
		"gogc", gcPercent(), "gomemlimit", memoryLimit())
	fmt.Fprintf(stdout, "latchkey: serving Consul KV API and S3 API on %s://%s (data in %s)\n",
		s.Scheme(), ln.Addr(), s.cfg.DataDir)
	if cfg.Notices != nil {
		s.printNotices(cfg.Notices, s.Scheme()+"://"+ln.Addr().String())
	}
	return s.Serve(ctx, ln)
}

// printNotices prints what an S3 client needs: the endpoint and the
// environment of the AWS CLI and SDKs, naming where the secret is.
func (s *Server) printNotices(w io.Writer, endpoint string) {
	secret := "the --secret-key given"
	if s.apis.s3CredPath != "" {
		secret = "in " + s.apis.s3CredPath
	}
	fmt.Fprintf(w, "latchkey: S3 endpoint %s (path-style; any region); for the AWS CLI and SDKs:\n", endpoint)
	fmt.Fprintf(w, "latchkey:   AWS_ENDPOINT_URL=%s AWS_ACCESS_KEY_ID=%s AWS_REGION=us-east-1\n", endpoint, s.apis.s3Key)
	fmt.Fprintf(w, "latchkey:   AWS_SECRET_ACCESS_KEY: %s; eval \"$(latchkey serve --print-env)\" sets them all\n", secret)
}

// dirInUse returns the engine's ErrLocked error when another server holds
// dir, and nil otherwise. It looks only at an existing data directory,
// creating nothing.
func dirInUse(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil {
		return nil
	}
	e, err := engine.Open(dir, &engine.Options{LiveBlobs: s3api.LiveBlobs})
	if errors.Is(err, engine.ErrLocked) {
		return err
	}
	if err == nil {
		e.Close()
	}
	return nil
}

// checkExposure refuses to serve the Consul API without a token beyond
// loopback unless cfg.ConsulAnonymous says so.
func checkExposure(cfg Config, addr net.Addr) error {
	if cfg.ACLToken != "" || cfg.ConsulAnonymous || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("server: refusing to serve the Consul KV API on %s, which is not loopback, without an ACL token: "+
		"set --acl-token (or LATCHKEY_ACL_TOKEN), or --consul-anonymous to serve it to anyone who can reach the address", addr)
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
