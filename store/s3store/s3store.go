package s3store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// Defaults used where Options leaves a field zero.
const (
	// DefaultResolveAttempts is the default Options.ResolveAttempts.
	DefaultResolveAttempts = 3
	// DefaultResolveBackoff is the default Options.ResolveBackoff.
	DefaultResolveBackoff = 100 * time.Millisecond
)

// Options configure Open. The zero value (or nil) talks to AWS with the
// standard credential chain and region resolution of config.LoadDefaultConfig
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, ~/.aws/…). A zero
// numeric field means its Default… constant; a negative one is an error.
type Options struct {
	// Endpoint is the base URL of an S3-compatible server, e.g.
	// "http://127.0.0.1:7070". Empty means AWS. Setting it turns on
	// path-style addressing.
	Endpoint string
	// Region is the signing region; empty means the configured region,
	// or "us-east-1" when none is configured.
	Region string
	// Credentials overrides the default credential chain.
	Credentials aws.CredentialsProvider
	// HTTPClient overrides the SDK's HTTP client.
	HTTPClient *http.Client
	// NoCompareAndDelete declares that the server's conditional DELETE is
	// not AWS-exact, so the store does not claim CompareAndDelete and a
	// Delete with IfMatch fails with ErrUnsupported. Versity Gateway needs
	// it: it answers 204 to DELETE If-Match on a missing key (AWS: 404), so
	// N racing conditional deletes all "win".
	NoCompareAndDelete bool
	// ResolveAttempts bounds the resends used to resolve one ambiguous
	// write; 0 means DefaultResolveAttempts (3).
	ResolveAttempts int
	// ResolveBackoff is the first delay between resolution attempts,
	// doubled each time with full jitter; 0 means DefaultResolveBackoff
	// (100ms).
	ResolveBackoff time.Duration
}

// withDefaults returns a copy of o (nil: every default) with zero fields
// set to their defaults, or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(optcheck.Named("ResolveAttempts", r.ResolveAttempts), optcheck.Named("ResolveBackoff", r.ResolveBackoff)); err != nil {
		return r, err
	}
	r.ResolveAttempts = cmp.Or(r.ResolveAttempts, DefaultResolveAttempts)
	r.ResolveBackoff = cmp.Or(r.ResolveBackoff, DefaultResolveBackoff)
	return r, nil
}

// Store is a store.Store over one bucket and key prefix.
type Store struct {
	client *s3.Client
	bucket string
	prefix string // "" or ends with "/"
	// res resolves this store's writes with the shared logic of
	// store/internal/resolve (its package doc): a Put whose first attempt
	// ended without an answer HEADs the key for our nonce (nonceOf), else
	// resends the same conditional write, and a 412/409/404 on the resend
	// with someone else's object, or none, is ErrUnknownOutcome, never a
	// conflict; a conditional Delete that now fails its condition may have
	// been the attempt that removed the version, so that answer stays
	// unknown.
	res    *resolve.Resolver
	noCAD  bool
	closed atomic.Bool
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Streamer = (*Store)(nil)
)

// Open returns a Store for the objects under prefix in bucket. A non-empty
// prefix gets a trailing '/' if it lacks one. Open does not contact the
// server.
func Open(ctx context.Context, bucket, prefix string, opts *Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("s3store: open: %w", err)
	}
	if bucket == "" {
		return nil, errors.New("s3store: open: empty bucket name")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := store.ValidateKey(prefix); err != nil {
			return nil, fmt.Errorf("s3store: open: prefix: %w", err)
		}
		prefix += "/"
	}
	var loadOpts []func(*config.LoadOptions) error
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(o.Credentials))
	}
	if o.HTTPClient != nil {
		loadOpts = append(loadOpts, config.WithHTTPClient(o.HTTPClient))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3store: open: load AWS config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		// Objects written by other tools may carry no checksum; that is
		// not worth a line on stderr per read.
		so.DisableLogOutputChecksumValidationSkipped = true
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
			so.UsePathStyle = true
		}
	})
	s := &Store{client: client, bucket: bucket, prefix: prefix, noCAD: o.NoCompareAndDelete}
	s.res = &resolve.Resolver{Attempts: o.ResolveAttempts, Backoff: o.ResolveBackoff, Err: opError, Look: s.nonceOf}
	return s, nil
}

// Client is the underlying S3 client (for tests and tools).
func (s *Store) Client() *s3.Client { return s.client }

// Bucket and Prefix say where the store's objects live.
func (s *Store) Bucket() string { return s.bucket }

// Prefix is the key prefix of every object, "" or ending in '/'.
func (s *Store) Prefix() string { return s.prefix }

// Capabilities: create-if-absent, compare-and-swap and compare-and-delete
// are S3 conditional requests; values stream. No transactions, no watch,
// and no UniqueVersions: a version is the ETag, on S3 the MD5 of the
// bytes, so the same value written again has the same version.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: !s.noCAD, Streaming: true, UniqueVersions: false}
}

// Close marks the store closed; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// noRetry turns off the SDK's retries for one call: writes resolve their
// own ambiguous outcomes.
func noRetry(o *s3.Options) { o.Retryer = aws.NopRetryer{} }

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
			fmt.Errorf("key with the store prefix is longer than %d bytes", store.MaxKeyLen))
	}
	return nil
}

func (s *Store) object(key string) *string { return aws.String(s.prefix + key) }

// quoteETag normalizes an ETag to its quoted strong form.
func quoteETag(e *string) store.Version {
	if e == nil {
		return ""
	}
	v := strings.TrimPrefix(*e, "W/")
	v = strings.Trim(v, `"`)
	if v == "" {
		return ""
	}
	return store.Version(`"` + v + `"`)
}
