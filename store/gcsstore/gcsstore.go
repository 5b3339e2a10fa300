package gcsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/objname"
)

// Options configure Open.
type Options struct {
	// Bucket is the GCS bucket holding the store's objects. Required.
	Bucket string
	// Prefix scopes the store to objects named "Prefix/<key>". Empty means
	// the whole bucket; a trailing '/' is added when missing.
	Prefix string
	// Endpoint is the JSON API base URL of a GCS-compatible server, e.g.
	// "http://127.0.0.1:4443/storage/v1/" for fake-gcs-server; uploads go
	// to /upload/storage/v1/ on the same host. Setting it turns off
	// authentication. Empty means Google Cloud Storage with application
	// default credentials, unless STORAGE_EMULATOR_HOST names an emulator
	// (as the official client does).
	Endpoint string
	// HTTPClient, when set, sends every request as it is: Open adds no
	// credentials to it, so for Google Cloud Storage it must authorize
	// requests itself (for example oauth2.NewClient with a token source
	// from golang.org/x/oauth2/google). Nil means a client of the store's
	// own, with application default credentials when they apply.
	HTTPClient *http.Client
	// NoCompareAndDelete declares that the server ignores ifGenerationMatch
	// on DELETE, so the store does not claim CompareAndDelete and a Delete
	// with IfMatch fails with ErrUnsupported. fake-gcs-server v1.56.1 needs
	// it: it deletes the object whatever generation the request names.
	NoCompareAndDelete bool
	// ResolveAttempts bounds the resends used to resolve one ambiguous
	// write. Zero means DefaultResolveAttempts; negative is refused.
	ResolveAttempts int
	// ResolveBackoff is the first delay between resolution attempts,
	// doubled each time with full jitter. Zero means
	// DefaultResolveBackoff; negative is refused.
	ResolveBackoff time.Duration
}

// The defaults of Options' zero fields.
const (
	DefaultResolveAttempts = 3
	// DefaultResolveBackoff: GCS allows about one write per second per
	// object.
	DefaultResolveBackoff = 200 * time.Millisecond
)

// The scopes the official client asks application default credentials
// for, and the variable naming an emulator.
const (
	scopeFull   = "https://www.googleapis.com/auth/devstorage.full_control"
	scopeCloud  = "https://www.googleapis.com/auth/cloud-platform"
	emulatorEnv = "STORAGE_EMULATOR_HOST"
)

// googleEndpoint is Google Cloud Storage's JSON API, reached with
// application default credentials. A variable only so that a test can
// stand in for Google.
var googleEndpoint = "https://storage.googleapis.com/storage/v1/"

// Store is a store.Store over one GCS bucket and object-name prefix.
type Store struct {
	hc        *http.Client
	own       *http.Transport // the transport Open made, closed by Close; nil with Options.HTTPClient
	api       string          // JSON API base URL, ends with '/'
	upload    string          // media upload base URL, ends with '/'
	name      string          // bucket
	prefix    string          // "" or ends with "/"
	attempts  int
	backoff   time.Duration
	noCAD     bool
	closed    atomic.Bool
	closeOnce sync.Once
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Streamer = (*Store)(nil)
)

// Open returns a Store for the objects under opts.Prefix in opts.Bucket.
// It does not contact the storage server; with application default
// credentials it finds them (a file, or the metadata server on Google
// Cloud) and fails when there are none.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	if opts == nil || opts.Bucket == "" {
		return nil, errors.New("gcsstore: open: empty bucket name")
	}
	o := *opts
	if err := optcheck.NonNegative(optcheck.Named("ResolveAttempts", o.ResolveAttempts), optcheck.Named("ResolveBackoff", o.ResolveBackoff)); err != nil {
		return nil, fmt.Errorf("gcsstore: open: %w", err)
	}
	prefix, err := objname.Prefix(o.Prefix)
	if err != nil {
		return nil, fmt.Errorf("gcsstore: open: prefix: %w", err)
	}
	api, auth := o.Endpoint, false
	switch host := os.Getenv(emulatorEnv); {
	case api != "":
	case host != "":
		// The official client's rule: a bare host:port is http.
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		api = strings.TrimSuffix(host, "/") + "/storage/v1/"
	default:
		api, auth = googleEndpoint, true
	}
	if !strings.HasSuffix(api, "/") {
		api += "/"
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gcsstore: open: endpoint %q: want http(s)://host/storage/v1/", api)
	}
	s := &Store{hc: o.HTTPClient, api: api, upload: u.Scheme + "://" + u.Host + "/upload/storage/v1/",
		name: o.Bucket, prefix: prefix, noCAD: o.NoCompareAndDelete,
		attempts: cmp.Or(o.ResolveAttempts, DefaultResolveAttempts), backoff: cmp.Or(o.ResolveBackoff, DefaultResolveBackoff)}
	if s.hc == nil {
		s.own = http.DefaultTransport.(*http.Transport).Clone()
		s.hc = &http.Client{Transport: s.own}
		if auth {
			// The token source outlives Open's context: it refreshes
			// tokens for as long as the store is used.
			creds, err := google.FindDefaultCredentials(context.WithoutCancel(ctx), scopeFull, scopeCloud)
			if err != nil {
				return nil, fmt.Errorf("gcsstore: open: %w", err)
			}
			s.hc.Transport = &oauth2.Transport{Source: creds.TokenSource, Base: s.own}
		}
	}
	return s, nil
}

// Bucket is the name of the store's bucket.
func (s *Store) Bucket() string { return s.name }

// Prefix is the object-name prefix of every key, "" or ending in '/'.
func (s *Store) Prefix() string { return s.prefix }

// Capabilities: create-if-absent, compare-and-swap and compare-and-delete
// are GCS generation preconditions; values stream. No transactions, no
// watch.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: !s.noCAD, Streaming: true, UniqueVersions: true}
}

// Close releases the store's idle connections; later calls fail with
// ErrClosed. Closing twice is not an error.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		if s.own != nil {
			s.own.CloseIdleConnections()
		}
	})
	return nil
}

// check runs store.GuardKeyOrPrefix, then GCS's limit on an object name
// (1,024 bytes, store.MaxKeyLen, the store's prefix included).
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	return objname.Check(ctx, s.closed.Load(), backend, op, key, isPrefix, s.prefix+key, store.MaxKeyLen)
}

// version renders a generation as a Version.
func version(gen int64) store.Version { return store.Version(strconv.FormatInt(gen, 10)) }

// generation parses a Version; ok is false for anything no stored object
// can have (empty, not decimal, zero or negative).
func generation(v store.Version) (int64, bool) {
	g, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || g <= 0 {
		return 0, false
	}
	return g, true
}
