package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/store/storeurl"
)

// serveFlag is one flag of `latchkey serve` with the environment variable
// that supplies it when the flag is not given.
type serveFlag struct {
	name, env, arg, help string
	isBool               bool
	set                  func(string) error
}

// logOptions are the serve flags that build the logger.
type logOptions struct{ level, format string }

func serveFlags(cfg *server.Config, logs *logOptions) []serveFlag {
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	boolean := func(p *bool) func(string) error {
		return func(v string) error {
			b, err := strconv.ParseBool(v)
			*p = b
			return err
		}
	}
	return []serveFlag{
		{name: "data-dir", env: "LATCHKEY_DATA_DIR", arg: "DIR", set: str(&cfg.DataDir),
			help: "data directory (default $XDG_STATE_HOME/latchkey/server, else ~/.local/state/latchkey/server)"},
		{name: "listen", env: "LATCHKEY_LISTEN", arg: "HOST:PORT", set: str(&cfg.Listen),
			help: "address to listen on (default " + server.DefaultListen + ": loopback, Consul's default port)"},
		{name: "node-name", env: "LATCHKEY_NODE_NAME", arg: "NAME", set: str(&cfg.NodeName),
			help: "Consul node name reported by /v1/agent/self and carried by sessions (default: host name)"},
		{name: "acl-token", env: "LATCHKEY_ACL_TOKEN", arg: "TOKEN", set: str(&cfg.ACLToken),
			help: "require this token on every /v1/ request (X-Consul-Token, ?token= or Authorization: Bearer)"},
		{name: "consul-anonymous", env: "LATCHKEY_CONSUL_ANONYMOUS", isBool: true, set: boolean(&cfg.ConsulAnonymous),
			help: "serve the Consul API without --acl-token on a non-loopback address (refused otherwise)"},
		{name: "consul-bump-identical-writes", env: "LATCHKEY_CONSUL_BUMP_IDENTICAL_WRITES", isBool: true, set: boolean(&cfg.ConsulBumpIdenticalWrites),
			help: "give every Consul KV write a new ModifyIndex, even one identical to the stored entry (Consul skips those)"},
		{name: "consul-max-sessions", env: "LATCHKEY_CONSUL_MAX_SESSIONS", arg: "N", set: positive(strconv.Atoi, &cfg.ConsulMaxSessions),
			help: "most live Consul sessions; one more create is answered 429 (default 16384)"},
		{name: "access-key", env: "LATCHKEY_ACCESS_KEY", arg: "KEY", set: str(&cfg.AccessKey),
			help: "S3 access key id (with --secret-key; default: a pair generated once and kept in the data directory)"},
		{name: "secret-key", env: "LATCHKEY_SECRET_KEY", arg: "SECRET", set: str(&cfg.SecretKey),
			help: "S3 secret access key"},
		{name: "anonymous", env: "LATCHKEY_ANONYMOUS", isBool: true, set: boolean(&cfg.Anonymous),
			help: "serve unsigned S3 requests instead of answering 403 AccessDenied"},
		{name: "s3-domain", env: "LATCHKEY_S3_DOMAIN", arg: "DOMAIN", set: str(&cfg.S3Domain),
			help: "also serve virtual-hosted-style S3 requests: Host BUCKET.DOMAIN addresses BUCKET (as MinIO's MINIO_DOMAIN)"},
		{name: "sse-master-key-file", env: "LATCHKEY_SSE_MASTER_KEY_FILE", arg: "FILE", set: str(&cfg.SSEMasterKeyFile),
			help: "master key of S3 server-side encryption (SSE-S3): 32 raw bytes, 64 hex digits or base64 (default: generated once into the data directory, which protects copies of the data made without it, not the directory itself)"},
		{name: "allowed-hosts", env: "LATCHKEY_ALLOWED_HOSTS", arg: "NAMES",
			set: func(v string) error {
				cfg.AllowedHosts = nil
				for _, n := range strings.Split(v, ",") {
					if n = strings.TrimSpace(n); n != "" {
						cfg.AllowedHosts = append(cfg.AllowedHosts, n)
					}
				}
				return nil
			},
			help: "comma-separated Host names (each with its subdomains) answered besides IP addresses and localhost while an API is served without credentials (no --acl-token, or --anonymous); others get 403, against DNS rebinding"},
		{name: "tls-cert", env: "LATCHKEY_TLS_CERT", arg: "FILE", set: str(&cfg.TLSCert),
			help: "serve HTTPS with this PEM certificate (with --tls-key)"},
		{name: "tls-key", env: "LATCHKEY_TLS_KEY", arg: "FILE", set: str(&cfg.TLSKey),
			help: "PEM private key of --tls-cert"},
		{name: "shutdown-timeout", env: "LATCHKEY_SHUTDOWN_TIMEOUT", arg: "DUR", set: positive(time.ParseDuration, &cfg.ShutdownTimeout),
			help: "on SIGINT/SIGTERM, how long requests in flight may finish before they are cut off (e.g. 30s; default 15s)"},
		{name: "http-max-conns-per-client", env: "LATCHKEY_HTTP_MAX_CONNS_PER_CLIENT", arg: "N",
			set: func(v string) error {
				n, err := strconv.Atoi(v)
				switch {
				case err != nil || n < 0:
					return errors.New("want a count ≥ 0")
				case n == 0:
					cfg.MaxConnsPerClient = -1 // Consul's 0: no limit
				default:
					cfg.MaxConnsPerClient = n
				}
				return nil
			},
			help: "connections one client IP may hold open, idle ones included; past it a connection is answered Consul's 429 and closed (default 200, as Consul's limits.http_max_conns_per_client; 0: no limit)"},
		{name: "log-level", env: "LATCHKEY_LOG_LEVEL", arg: "LEVEL", set: str(&logs.level),
			help: "debug, info, warn or error (default info); logs go to stderr"},
		{name: "log-format", env: "LATCHKEY_LOG_FORMAT", arg: "FORMAT", set: str(&logs.format),
			help: "text (key=value, the default) or json (one JSON object a line)"},
		{name: "log-requests", env: "LATCHKEY_LOG_REQUESTS", isBool: true, set: boolean(&cfg.LogRequests),
			help: "log every request at info level: method, path (never the query), status, duration, request id"},
	}
}

// positive is the setter of a serve flag whose value, read with parse,
// must be above zero.
func positive[T int | time.Duration](parse func(string) (T, error), p *T) func(string) error {
	return func(v string) error {
		n, err := parse(v)
		if err == nil && n <= 0 {
			err = errors.New("must be positive")
		}
		*p = n
		return err
	}
}

// funcValue is a flag.Value that routes through set.
type funcValue struct {
	set    func(string) error
	isBool bool
}

func (f funcValue) String() string     { return "" }
func (f funcValue) Set(v string) error { return f.set(v) }
func (f funcValue) IsBoolFlag() bool   { return f.isBool }

func runServe(ctx context.Context, e *env, args []string) error {
	printEnv := false
	if i := slices.IndexFunc(args, func(a string) bool { return a == "--print-env" || a == "-print-env" }); i >= 0 {
		printEnv, args = true, slices.Delete(slices.Clone(args), i, i+1)
	}
	cfg, help, err := serveConfig(e, args)
	if err != nil || help {
		return err
	}
	if printEnv {
		return printServeEnv(e, cfg)
	}
	cfg.Notices = e.stderr
	applyGCDefaults(e)
	err = server.Run(ctx, cfg, e.stdout)
	if errors.Is(err, server.ErrDataDirInUse) {
		return failf("serve: %s is in use by another latchkey server", cfg.DataDir)
	}
	return err
}

// applyGCDefaults runs the collector as server.GCDefaultsFor decides from
// the environment (GOGC and GOMEMLIMIT, when set, win); the server's
// "serving" log line shows the settings in force.
func applyGCDefaults(e *env) {
	server.GCDefaultsFor(e.getenv, os.ReadFile).Apply()
}

// serveConfig turns flags and environment into the server's Config. It
// prints the help and reports help=true for --help. It never turns fsync
// off: no flag or variable reaches Config.NoSync.
func serveConfig(e *env, args []string) (cfg server.Config, help bool, err error) {
	logs := logOptions{level: "info", format: "text"}
	flags := serveFlags(&cfg, &logs)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range flags {
		fs.Var(funcValue{f.set, f.isBool}, f.name, f.help)
	}
	err = fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		serveUsage(e.stdout, flags)
		return cfg, true, nil
	case err != nil:
		return cfg, false, usagef("serve: %v (see latchkey serve --help)", err)
	case fs.NArg() > 0:
		return cfg, false, usagef("serve: unexpected argument %q (see latchkey serve --help)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range flags {
		if v := e.getenv(f.env); v != "" && !given[f.name] {
			if err := f.set(v); err != nil {
				return cfg, false, usagef("serve: $%s=%q: %v", f.env, v, err)
			}
		}
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return cfg, false, usagef("serve: --access-key and --secret-key go together (or neither: a pair is generated and kept in the data directory)")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return cfg, false, usagef("serve: --tls-cert and --tls-key go together")
	}
	if cfg.DataDir == "" {
		state, err := storeurl.StateDir(e.getenv)
		if err != nil {
			return cfg, false, failf("serve: no --data-dir and %v", err)
		}
		cfg.DataDir = filepath.Join(state, "server")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logs.level)); err != nil {
		return cfg, false, usagef("serve: --log-level %q: want debug, info, warn or error", logs.level)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch logs.format {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, hopts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(e.stderr, hopts))
	default:
		return cfg, false, usagef("serve: --log-format %q: want text or json", logs.format)
	}
	cfg.NoSync = false // tests only; never from the command line
	return cfg, false, nil
}

func serveUsage(w io.Writer, flags []serveFlag) {
	var b strings.Builder
	b.WriteString("Usage: latchkey serve [flags]\n\nFlags (each also an environment variable; the flag wins):\n")
	for _, f := range flags {
		name := "--" + f.name
		if f.arg != "" {
			name += " " + f.arg
		}
		fmt.Fprintf(&b, "  %-24s %s\n  %-24s   $%s\n", name, f.help, "", f.env)
	}
	b.WriteString(`  --print-env                print export lines for the S3 API's clients
                             (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
                             AWS_SECRET_ACCESS_KEY, AWS_REGION) and
                             CONSUL_HTTP_ADDR, for eval "$(latchkey serve
                             --print-env)" with the same flags, and exit

Runs latchkey's durable server: the Consul-compatible KV API under /v1/ and
the S3-compatible API on every other path, on one listener, its data in one
directory; writes are acknowledged once fsynced. It listens on loopback by
default; beyond it, the Consul API needs --acl-token (or
--consul-anonymous) and S3 requests must be signed (or --anonymous). At
start it prints the S3 endpoint, the access key id and where the secret is.
SIGINT or SIGTERM stop it gracefully (--shutdown-timeout).

Examples:
  latchkey serve
  LATCHKEY_DATA_DIR=/var/lib/latchkey latchkey serve --listen 0.0.0.0:8500 --acl-token "$TOKEN"
  eval "$(latchkey serve --print-env)"; aws s3 mb s3://my-bucket

Endpoints:
  /v1/...      Consul KV API (point consul/api or CONSUL_HTTP_ADDR here)
  /-/health    GET: {"status":"ok","index":N}
  /-/metrics   GET: Prometheus metrics (with --acl-token, only with the token)
  /ui/         the web console (login with the ACL token or the S3 keys)
  /BUCKET/KEY  S3 API, path-style (point the S3 endpoint here)

Exit codes (all: latchkey help exit-codes):
  0   stopped cleanly (SIGINT, SIGTERM)
  1   the data directory is in use, or the server failed
  2   bad command line

More: docs/cli.md, "serve in depth" (memory, limits, shutdown); the
README's serve section; docs/security.md.
`)
	io.WriteString(w, b.String())
}

// printServeEnv prints the shell lines that point the AWS CLI and SDKs
// (and Consul's) at the server cfg describes, with its S3 credentials: the
// keys given, else the pair in the data directory, which a first `serve`
// creates.
func printServeEnv(e *env, cfg server.Config) error {
	listen := cmp.Or(cfg.Listen, server.DefaultListen)
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "0" {
		return usagef("serve --print-env: --listen %q: want the HOST:PORT the server listens on", listen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ak, sk := cfg.AccessKey, cfg.SecretKey
	if ak == "" {
		if ak, sk, err = server.StoredCredentials(cfg.DataDir); errors.Is(err, fs.ErrNotExist) {
			return failf("serve --print-env: no S3 credentials in %s yet: start latchkey serve once (it creates them), or give --access-key and --secret-key", cfg.DataDir)
		} else if err != nil {
			return failf("serve --print-env: %v", err)
		}
	}
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	addr := net.JoinHostPort(host, port)
	for _, kv := range [][2]string{
		{"AWS_ENDPOINT_URL", scheme + "://" + addr},
		{"AWS_ACCESS_KEY_ID", ak},
		{"AWS_SECRET_ACCESS_KEY", sk},
		{"AWS_REGION", "us-east-1"},
		{"CONSUL_HTTP_ADDR", addr},
	} {
		fmt.Fprintf(e.stdout, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return nil
}

// shellQuote quotes v for sh when it holds anything but safe characters.
func shellQuote(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:/._-+=@") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
