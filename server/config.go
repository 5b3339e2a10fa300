package server

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/server/internal/consulapi"
)

// DefaultListen is the default listen address: loopback, on Consul's
// default HTTP port, so Consul clients (which default to 127.0.0.1:8500)
// work with no configuration. S3 clients are pointed at it explicitly.
const DefaultListen = "127.0.0.1:8500"

// The defaults of Config's HTTP bounds (a zero field means its constant).
const (
	// DefaultReadHeaderTimeout bounds reading one request's header.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxHeaderBytes bounds one request's header section.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultShutdownTimeout bounds draining the requests in flight.
	DefaultShutdownTimeout = 15 * time.Second
)

// Config is everything the server needs. Zero values mean the documented
// defaults; DataDir is required.
type Config struct {
	// DataDir holds the engine's database, blobs and lock. Required.
	DataDir string
	// Listen is the HOST:PORT to listen on. Default DefaultListen.
	Listen string

	// NodeName is the Consul node name (/v1/agent/self, sessions' Node).
	// Default: the host name.
	NodeName string
	// ACLToken, when set, is required on every /v1/ request.
	ACLToken string
	// ConsulAnonymous allows serving the Consul API without ACLToken on a
	// listener that is not loopback. Without it, Serve refuses such a
	// listener: nothing is served unauthenticated beyond this machine
	// unless explicitly enabled. On loopback no token is needed.
	ConsulAnonymous bool
	// ConsulBumpIdenticalWrites gives every successful Consul KV write a
	// fresh ModifyIndex, even one identical to the stored entry (which
	// Consul, and latchkey by default, skip without waking watchers).
	ConsulBumpIdenticalWrites bool
	// ConsulMaxSessions caps the live Consul sessions; one more create is
	// answered 429 in Consul's plain-text form. Zero:
	// consulapi.DefaultMaxSessions (16384); negative is an error.
	ConsulMaxSessions int

	// AccessKey and SecretKey are the S3 credentials. When both are empty
	// the S3 layer generates a pair once and keeps it in DataDir.
	AccessKey, SecretKey string
	// Anonymous serves unsigned S3 requests instead of refusing them.
	Anonymous bool
	// S3Domain, when set, also serves virtual-hosted-style S3 requests:
	// a Host of BUCKET.S3Domain (any port) addresses BUCKET, and every path
	// of such a host is an object key (none is Consul's /v1/ or /-/).
	S3Domain string

	// SSEMasterKeyFile is the file holding the master key of S3
	// server-side encryption (SSE-S3): 32 raw bytes, 64 hex digits or the
	// base64 of 32 bytes. When empty, a key is generated once into
	// DataDir (mode 0600), which protects copies of the data that leave
	// the key file behind, not the data directory itself.
	SSEMasterKeyFile string

	// AllowedHosts are the Host names (each with its subdomains) a server
	// that answers without credentials (no ACLToken, or Anonymous) answers
	// besides IP addresses and localhost; any other Host gets 403, against
	// DNS rebinding. S3Domain is allowed too. Unused when every API needs
	// credentials.
	AllowedHosts []string

	// TLSCert and TLSKey, when set (both or neither), serve HTTPS.
	TLSCert, TLSKey string

	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
	// LogRequests logs every request at info level (method, path without
	// the query, status, duration, request id); otherwise requests are
	// logged at debug level, and 5xx answers at warn level.
	LogRequests bool
	// Notices, when set, receives at start the lines a client needs to
	// use the S3 API: the endpoint, the access key id and where the secret
	// is (never the secret itself).
	Notices io.Writer

	// NoSync disables fsync in the engine. Tests only: it voids the
	// durability promise.
	NoSync bool

	// ReadHeaderTimeout, IdleTimeout, MaxHeaderBytes and ShutdownTimeout
	// bound the HTTP server; zero means DefaultReadHeaderTimeout (10s),
	// DefaultIdleTimeout (120s), DefaultMaxHeaderBytes (64 KiB) and
	// DefaultShutdownTimeout (15s); negative is an error.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	ShutdownTimeout   time.Duration

	// MaxConnsPerClient is how many connections one client IP may hold
	// open at once, idle keep-alive ones included, as Consul's
	// limits.http_max_conns_per_client: a connection past it is answered
	// 429 with Consul's text and closed before its request is read.
	// Zero means DefaultMaxConnsPerClient (200, Consul's default); a
	// negative value means no limit.
	MaxConnsPerClient int
}

func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, errors.New("server: no data directory")
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, errors.New("server: --tls-cert and --tls-key go together")
	}
	// MaxConnsPerClient is not checked: negative means no limit.
	if err := optcheck.NonNegative(
		optcheck.Named("ConsulMaxSessions", c.ConsulMaxSessions),
		optcheck.Named("ReadHeaderTimeout", c.ReadHeaderTimeout),
		optcheck.Named("IdleTimeout", c.IdleTimeout),
		optcheck.Named("MaxHeaderBytes", c.MaxHeaderBytes),
		optcheck.Named("ShutdownTimeout", c.ShutdownTimeout),
	); err != nil {
		return c, fmt.Errorf("server: %w", err)
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return c, errors.New("server: --access-key and --secret-key go together")
	}
	if c.NodeName == "" {
		c.NodeName = consulapi.HostNodeName()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.MaxConnsPerClient = cmp.Or(c.MaxConnsPerClient, DefaultMaxConnsPerClient)
	return c, nil
}
