package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/latchkey/latchkey/store"
)

// Options configure Open.
type Options struct {
	// Bucket is the GCS bucket holding the store's objects. Required.
	Bucket string
	// Prefix scopes the store to objects named "Prefix/<key>". Empty means
	// the whole bucket; a trailing '/' is added when missing.
	Prefix string
	// Endpoint is the JSON API base URL of a GCS-compatible server, e.g.
	// "http://127.0.0.1:4443/storage/v1/" for fake-gcs-server. Setting it
	// turns off authentication and sends reads through the JSON API. Empty means Google Cloud Storage with
	// application default credentials, unless STORAGE_EMULATOR_HOST names
	// an emulator (the official client honours it).
	Endpoint string
	// ClientOptions are passed to storage.NewClient after the options Open
	// derives from Endpoint (credentials, an HTTP client, …).
	ClientOptions []option.ClientOption
	// NoCompareAndDelete declares that the server ignores ifGenerationMatch
	// on DELETE, so the store does not claim CompareAndDelete and a Delete
	// with IfMatch fails with ErrUnsupported. fake-gcs-server v1.56.1 needs
	// it: it deletes the object whatever generation the request names.
	NoCompareAndDelete bool
	// ResolveAttempts bounds the resends used to resolve one ambiguous
	// write; 0 means 3.
	ResolveAttempts int
	// ResolveBackoff is the first delay between resolution attempts,
	// doubled each time with full jitter; 0 means 200ms (GCS allows about
	// one write per second per object).
	ResolveBackoff time.Duration
}

// readAttempts bounds the client's attempts at one read (get, attrs,
// one list page); the last resolve.Failure is then ErrTransient.
const readAttempts = 4

// Store is a store.Store over one GCS bucket and object-name prefix.
type Store struct {
	client    *storage.Client
	bucket    *storage.BucketHandle
	name      string
	prefix    string // "" or ends with "/"
	attempts  int
	backoff   time.Duration
	noCAD     bool
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Streamer = (*Store)(nil)
)

// Open returns a Store for the objects under opts.Prefix in opts.Bucket.
// It does not contact the server.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	if opts == nil || opts.Bucket == "" {
		return nil, errors.New("gcsstore: open: empty bucket name")
	}
	o := *opts
	prefix := strings.Trim(o.Prefix, "/")
	if prefix != "" {
		if err := store.ValidateKey(prefix); err != nil {
			return nil, fmt.Errorf("gcsstore: open: prefix: %w", err)
		}
		prefix += "/"
	}
	var copts []option.ClientOption
	if o.Endpoint != "" {
		// Reads go through the JSON API too: the XML API's host is not
		// derived from Endpoint on every server (fake-gcs-server serves
		// it only under its -public-host).
		copts = append(copts, option.WithEndpoint(o.Endpoint), option.WithoutAuthentication(), storage.WithJSONReads())
	} else if os.Getenv("STORAGE_EMULATOR_HOST") != "" {
		// The client points itself at the emulator; reads go through the
		// JSON API for the same reason as above.
		copts = append(copts, storage.WithJSONReads())
	}
	copts = append(copts, o.ClientOptions...)
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("gcsstore: open: %w", err)
	}
	// Reads keep the client's retries of 408, 429, 5xx and transport
	// errors, but bounded: by default it retries until the context ends.
	client.SetRetry(storage.WithMaxAttempts(readAttempts))
	s := &Store{client: client, bucket: client.Bucket(o.Bucket), name: o.Bucket, prefix: prefix,
		attempts: o.ResolveAttempts, backoff: o.ResolveBackoff, noCAD: o.NoCompareAndDelete}
	if s.attempts <= 0 {
		s.attempts = 3
	}
	if s.backoff <= 0 {
		s.backoff = 200 * time.Millisecond
	}
	return s, nil
}

// Client is the underlying GCS client (for tests and tools).
func (s *Store) Client() *storage.Client { return s.client }

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

// Close closes the client; later calls fail with ErrClosed. A second
// Close returns the first one's result.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() { s.closeErr = s.client.Close() })
	return s.closeErr
}

// check runs store.Guard, then the limit of the store's prefix.
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	guard := store.Guard
	if isPrefix {
		guard = store.GuardPrefix
	}
	if err := guard(ctx, s.closed.Load(), backend, op, key); err != nil {
		return err
	}
	if len(s.prefix)+len(key) > store.MaxKeyLen {
		return store.NewOpError(backend, op, key, store.ErrInvalidKey,
			fmt.Errorf("key with the store prefix is longer than %d bytes (GCS's object-name limit)", store.MaxKeyLen))
	}
	return nil
}

// object is the handle of key's object. Writes turn the client's retries
// off with writeHandle.
func (s *Store) object(key string) *storage.ObjectHandle { return s.bucket.Object(s.prefix + key) }

// writeHandle is key's object with the client's retries off: a resent
// conditional write that already won answers 412 and would look lost, so
// writes resolve their own ambiguous outcomes (resolve.go).
func (s *Store) writeHandle(key string) *storage.ObjectHandle {
	return s.object(key).Retryer(storage.WithPolicy(storage.RetryNever))
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
