package s3store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/objname"
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
// standard credential chain, region and HTTP client of
// config.LoadDefaultConfig (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_REGION, AWS_PROFILE, AWS_CA_BUNDLE, ~/.aws/…). A zero numeric field
// means its Default… constant; a negative one is an error.
type Options struct {
	// Endpoint is the base URL of an S3-compatible server, e.g.
	// "http://127.0.0.1:7070", addressed path-style. Empty means
	// AWS_ENDPOINT_URL_S3, else the configuration's endpoint_url
	// (AWS_ENDPOINT_URL), both path-style too, else AWS's regional
	// endpoint (https://s3.<region>.amazonaws.com, virtual-hosted when
	// the bucket name is a DNS label).
	Endpoint string
	// Region is the signing region; empty means the configured region,
	// or "us-east-1" when none is configured.
	Region string
	// Credentials overrides the default credential chain.
	Credentials aws.CredentialsProvider
	// HTTPClient overrides the HTTP client (by default the SDK's, which
	// honours AWS_CA_BUNDLE).
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
	client *client
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
	prefix, err = objname.Prefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("s3store: open: prefix: %w", err)
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
	region := cmp.Or(cfg.Region, "us-east-1")
	creds := cfg.Credentials // nil: requests go unsigned (anonymous)
	if creds != nil && !aws.IsCredentialsProvider(creds, (*aws.CredentialsCache)(nil)) {
		creds = aws.NewCredentialsCache(creds)
	}
	endpoint := cmp.Or(o.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), aws.ToString(cfg.BaseEndpoint))
	hc := cfg.HTTPClient // set by Options.HTTPClient or AWS_CA_BUNDLE
	if hc == nil {
		hc = awshttp.NewBuildableClient()
	}
	client, err := newClient(hc, creds, region, endpoint, bucket)
	if err != nil {
		return nil, fmt.Errorf("s3store: open: %w", err)
	}
	s := &Store{client: client, bucket: bucket, prefix: prefix, noCAD: o.NoCompareAndDelete}
	s.res = &resolve.Resolver{Attempts: o.ResolveAttempts, Backoff: o.ResolveBackoff,
		Err: opError, Look: s.nonceOf, Classify: classify, NoBucket: codeNoSuchBucket}
	return s, nil
}

// CreateBucket creates the store's bucket in the store's region; a
// bucket that exists and is ours already is fine.
func (s *Store) CreateBucket(ctx context.Context) error {
	err := s.client.createBucket(ctx)
	if _, code := errorOf(err); err == nil || code == "BucketAlreadyOwnedByYou" {
		return nil
	}
	return fmt.Errorf("s3store: create bucket %q: %w", s.bucket, err)
}

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

// check runs store.GuardKeyOrPrefix, then S3's limit on an object key
// (store.MaxKeyLen bytes, the store's prefix included).
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	return objname.Check(ctx, s.closed.Load(), backend, op, key, isPrefix, s.object(key), store.MaxKeyLen)
}

// object is the name of key's object.
func (s *Store) object(key string) string { return s.prefix + key }

// quoteETag normalizes an ETag to its quoted strong form.
func quoteETag(e string) store.Version {
	v := strings.TrimPrefix(e, "W/")
	v = strings.Trim(v, `"`)
	if v == "" {
		return ""
	}
	return store.Version(`"` + v + `"`)
}
