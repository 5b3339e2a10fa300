package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/engine"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/store/storeurl"
)

// serveFlag is one flag of `latchkey serve` with the environment variable
// that supplies it when the flag is not given.
type serveFlag struct {
	name, env, arg, help string
	isBool               bool
	set                  func(string) error
}

func serveFlags(cfg *server.Config, logLevel *string) []serveFlag {
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	return []serveFlag{
		{name: "data-dir", env: "LATCHKEY_DATA_DIR", arg: "DIR", set: str(&cfg.DataDir),
			help: "data directory (default $XDG_STATE_HOME/latchkey/server, else ~/.local/state/latchkey/server)"},
		{name: "listen", env: "LATCHKEY_LISTEN", arg: "HOST:PORT", set: str(&cfg.Listen),
			help: "address to listen on (default " + server.DefaultListen + ": loopback, Consul's default port)"},
		{name: "node-name", env: "LATCHKEY_NODE_NAME", arg: "NAME", set: str(&cfg.NodeName),
			help: "Consul node name reported by /v1/agent/self and carried by sessions (default: host name)"},
		{name: "acl-token", env: "LATCHKEY_ACL_TOKEN", arg: "TOKEN", set: str(&cfg.ACLToken),
			help: "require this token on every /v1/ request (X-Consul-Token, ?token= or Authorization: Bearer)"},
		{name: "access-key", env: "LATCHKEY_ACCESS_KEY", arg: "KEY", set: str(&cfg.AccessKey),
			help: "S3 access key id (with --secret-key; default: a pair generated once and kept in the data directory)"},
		{name: "secret-key", env: "LATCHKEY_SECRET_KEY", arg: "SECRET", set: str(&cfg.SecretKey),
			help: "S3 secret access key"},
		{name: "anonymous", env: "LATCHKEY_ANONYMOUS", isBool: true,
			set: func(v string) error {
				b, err := strconv.ParseBool(v)
				cfg.Anonymous = b
				return err
			},
			help: "serve unsigned S3 requests instead of answering 403 AccessDenied"},
		{name: "tls-cert", env: "LATCHKEY_TLS_CERT", arg: "FILE", set: str(&cfg.TLSCert),
			help: "serve HTTPS with this PEM certificate (with --tls-key)"},
		{name: "tls-key", env: "LATCHKEY_TLS_KEY", arg: "FILE", set: str(&cfg.TLSKey),
			help: "PEM private key of --tls-cert"},
		{name: "log-level", env: "LATCHKEY_LOG_LEVEL", arg: "LEVEL", set: str(logLevel),
			help: "debug, info, warn or error (default info); logs go to stderr"},
	}
}

// boolValue is a flag.Value for a bool flag that routes through set.
type funcValue struct {
	set    func(string) error
	isBool bool
}

func (f funcValue) String() string     { return "" }
func (f funcValue) Set(v string) error { return f.set(v) }
func (f funcValue) IsBoolFlag() bool   { return f.isBool }

func runServe(ctx context.Context, e *env, args []string) error {
	var cfg server.Config
	logLevel := "info"
	flags := serveFlags(&cfg, &logLevel)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range flags {
		fs.Var(funcValue{f.set, f.isBool}, f.name, f.help)
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		serveUsage(e.stdout, flags)
		return nil
	case err != nil:
		return usagef("serve: %v", err)
	case fs.NArg() > 0:
		return usagef("serve: unexpected argument %q (see latchkey serve --help)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range flags {
		if v := e.getenv(f.env); v != "" && !given[f.name] {
			if err := f.set(v); err != nil {
				return usagef("serve: $%s=%q: %v", f.env, v, err)
			}
		}
	}
	if cfg.DataDir == "" {
		state, err := storeurl.StateDir(e.getenv)
		if err != nil {
			return failf("serve: no --data-dir and %v", err)
		}
		cfg.DataDir = filepath.Join(state, "server")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return usagef("serve: --log-level %q: want debug, info, warn or error", logLevel)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	err = server.Run(ctx, cfg, e.stdout)
	if errors.Is(err, engine.ErrLocked) {
		return failf("serve: %s is in use by another latchkey server", cfg.DataDir)
	}
	return err
}

func serveUsage(w io.Writer, flags []serveFlag) {
	var b strings.Builder
	b.WriteString(`Usage: latchkey serve [flags]

Run latchkey's durable server: the Consul-compatible KV API (kv, txn,
sessions, locks) under /v1/ and the S3-compatible API on every other path,
on one listener, with its data in one directory. Writes are acknowledged only
once fsynced. A second server on the same directory is refused.

Every flag may also be given as an environment variable (the flag wins).

Flags:
`)
	for _, f := range flags {
		name := "--" + f.name
		if f.arg != "" {
			name += " " + f.arg
		}
		fmt.Fprintf(&b, "  %-24s %s\n  %-24s   $%s\n", name, f.help, "", f.env)
	}
	b.WriteString(`
Endpoints:
  /v1/...      Consul KV API (point consul/api or CONSUL_HTTP_ADDR here)
  /-/health    GET: {"status":"ok","index":N}
  /-/metrics   GET: Prometheus metrics
  /BUCKET/KEY  S3 API, path-style (point the S3 endpoint here)

It stops gracefully on SIGINT or SIGTERM.
`)
	io.WriteString(w, b.String())
}
