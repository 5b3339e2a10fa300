package azblobstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

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

// Azurite's well-known development account (the emulator's documented
// default; not a secret). storeurl uses it only for a loopback endpoint
// whose path names this account, when no credentials are configured.
const (
	DevAccountName = "devstoreaccount1"
	DevAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Options configure Open. Container is required; everything else has a
// documented zero value. Exactly one way to authenticate is used, in this
// order: ConnectionString; AccountName with AccountKey (shared key);
// Credential (Microsoft Entra ID); none (ServiceURL must then carry a SAS
// token in its query, or the container must allow anonymous access). A
// zero numeric field means its Default… constant; a negative one is an
// error.
type Options struct {
	// ServiceURL is the blob service endpoint: for Azure
	// "https://ACCOUNT.blob.core.windows.net/" (the default when
	// AccountName is set), for Azurite "http://127.0.0.1:10000/devstoreaccount1".
	// Ignored with ConnectionString, which names its own endpoint.
	ServiceURL string
	// Container holds the store's blobs. It must exist unless
	// CreateContainer is set.
	Container string
	// CreateContainer makes Open create the container when it does not
	// exist (one request; an existing container is fine). Without it Open
	// does not contact the service.
	CreateContainer bool
	// Prefix scopes the store to the blobs named "Prefix/…". Empty means
	// the whole container.
	Prefix string
	// AccountName and AccountKey authenticate with a shared key.
	AccountName, AccountKey string
	// ConnectionString is an Azure Storage connection string
	// (AZURE_STORAGE_CONNECTION_STRING): endpoint and credentials at once.
	ConnectionString string
	// Credential authenticates with a token (azidentity's credentials).
	Credential azcore.TokenCredential
	// Transport overrides the HTTP client (tests inject faults here).
	Transport policy.Transporter
	// ResolveAttempts bounds the resends used to resolve one ambiguous
	// write; 0 means DefaultResolveAttempts (3).
	ResolveAttempts int
	// ResolveBackoff is the first delay between resolution attempts,
	// doubled each time with full jitter; 0 means DefaultResolveBackoff
	// (100ms).
	ResolveBackoff time.Duration
}

// withDefaults returns a copy of o with zero fields set to their
// defaults, or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	r := *o
	if err := optcheck.NonNegative(optcheck.Named("ResolveAttempts", r.ResolveAttempts), optcheck.Named("ResolveBackoff", r.ResolveBackoff)); err != nil {
		return r, err
	}
	r.ResolveAttempts = cmp.Or(r.ResolveAttempts, DefaultResolveAttempts)
	r.ResolveBackoff = cmp.Or(r.ResolveBackoff, DefaultResolveBackoff)
	return r, nil
}

// Store is a store.Store over the blobs of one container under one prefix.
type Store struct {
	read      *container.Client // the SDK's standard retries
	write     *container.Client // no SDK retries: writes resolve their own ambiguity
	container string
	prefix    string // blob-name form: "" or ends with "/"
	// res resolves this store's writes with the shared logic of
	// store/internal/resolve (its package doc): a write whose first
	// attempt ended without an answer reads the blob's properties for our
	// nonce (nonceOf), else resends the same write, and a 409/412/404 on
	// the resend with someone else's nonce, or none, is ErrUnknownOutcome,
	// never a conflict; a conditional delete that now fails its condition
	// may have been the attempt that removed the version, so that answer
	// stays unknown.
	res     *resolve.Resolver
	markers *markerCache
	closed  atomic.Bool
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Streamer = (*Store)(nil)
)

// Open returns a Store for the blobs under opts.Prefix in opts.Container.
// It contacts the service only to create the container, when asked to.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	if opts == nil {
		return nil, errors.New("azblobstore: open: no options (a container is required)")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("azblobstore: open: %w", err)
	}
	if err := validContainer(o.Container); err != nil {
		return nil, fmt.Errorf("azblobstore: open: %w", err)
	}
	prefix, err := objname.Prefix(o.Prefix)
	if err != nil {
		return nil, fmt.Errorf("azblobstore: open: prefix: %w", err)
	}
	prefix = blobName(prefix) // '/' is its own blob name
	read, err := o.client(policy.RetryOptions{})
	if err != nil {
		return nil, fmt.Errorf("azblobstore: open: %w", err)
	}
	write, err := o.client(policy.RetryOptions{MaxRetries: -1})
	if err != nil {
		return nil, fmt.Errorf("azblobstore: open: %w", err)
	}
	s := &Store{read: read, write: write, container: o.Container, prefix: prefix, markers: newMarkerCache(markerCacheSize)}
	s.res = &resolve.Resolver{Attempts: o.ResolveAttempts, Backoff: o.ResolveBackoff,
		Err: opError, Look: s.nonceOf, Classify: classify, NoBucket: codeContainerNotFound}
	if o.CreateContainer {
		if _, err := read.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return nil, fmt.Errorf("azblobstore: open: create container %q: %w", o.Container, shortError{err})
		}
	}
	return s, nil
}

// client builds a container client with the given retry policy.
func (o Options) client(retry policy.RetryOptions) (*container.Client, error) {
	co := &container.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: retry, Transport: o.Transport}}
	if o.ConnectionString != "" {
		if o.AccountKey != "" || o.Credential != nil {
			return nil, errors.New("give a connection string or other credentials, not both")
		}
		return container.NewClientFromConnectionString(o.ConnectionString, o.Container, co)
	}
	svc := o.ServiceURL
	if svc == "" {
		if o.AccountName == "" {
			return nil, errors.New("no service URL: set ServiceURL, AccountName or ConnectionString")
		}
		svc = "https://" + o.AccountName + ".blob.core.windows.net/"
	}
	u, err := url.Parse(svc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("service URL %q: want http(s)://host[:port][/account]", svc)
	}
	curl := runtime.JoinPaths(svc, o.Container)
	switch {
	case o.AccountKey != "":
		if o.AccountName == "" {
			return nil, errors.New("an account key needs its account name")
		}
		cred, err := container.NewSharedKeyCredential(o.AccountName, o.AccountKey)
		if err != nil {
			return nil, fmt.Errorf("shared key: %w", err)
		}
		return container.NewClientWithSharedKeyCredential(curl, cred, co)
	case o.Credential != nil:
		return container.NewClient(curl, o.Credential, co)
	default:
		return container.NewClientWithNoCredential(curl, co)
	}
}

// validContainer applies Azure's container naming rules: 3 to 63
// characters of lowercase letters, digits and single hyphens, starting and
// ending with a letter or digit.
func validContainer(name string) error {
	bad := len(name) < 3 || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--")
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("container name %q: want 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit", name)
	}
	return nil
}

// Container is the underlying container client (for tests and tools). It
// retries with the SDK's defaults.
func (s *Store) Container() *container.Client { return s.read }

// Prefix is the blob-name prefix of every key, "" or ending in '/'.
func (s *Store) Prefix() string { return s.prefix }

// Capabilities: create-if-absent, compare-and-swap and compare-and-delete
// are Azure conditional requests; values stream. No transactions, no watch.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true, Streaming: true, UniqueVersions: true}
}

// Close marks the store closed; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// check runs store.GuardKeyOrPrefix, then Azure's limit on a blob name
// (the store's prefix and the escaped key).
func (s *Store) check(ctx context.Context, op, key string, isPrefix bool) error {
	return objname.Check(ctx, s.closed.Load(), backend, op, key, isPrefix, s.blob(key), maxBlobName)
}

// maxBlobName is Azure's limit on a blob name (1,024 characters; we count
// bytes, which is stricter).
const maxBlobName = 1024

// blobName maps a key onto its blob name. Azure turns '\' in a blob name
// into '/', so '\' is written as "%5C", and '%' as "%25" to keep the
// mapping one-to-one. Other keys are their blob names.
func blobName(key string) string {
	if !strings.ContainsAny(key, `%\`) {
		return key
	}
	return strings.NewReplacer("%", "%25", `\`, "%5C").Replace(key)
}

// keyOf is the inverse of blobName. A foreign blob name whose '%' does not
// start "%25" or "%5C" keeps it as is.
func keyOf(name string) string {
	if !strings.Contains(name, "%") {
		return name
	}
	return strings.NewReplacer("%25", "%", "%5C", `\`, "%5c", `\`).Replace(name)
}

// blob returns the blob name of key.
func (s *Store) blob(key string) string { return s.prefix + blobName(key) }

// quoteETag normalizes an ETag to its quoted strong form.
func quoteETag(e *azcore.ETag) store.Version {
	if e == nil {
		return ""
	}
	v := strings.TrimPrefix(string(*e), "W/")
	v = strings.Trim(v, `"`)
	if v == "" {
		return ""
	}
	return store.Version(`"` + v + `"`)
}
