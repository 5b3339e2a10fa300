// Package storeurl opens a store.Store from a URL. It is the one library
// package that knows every backend; everything else takes a store.Store.
//
// Schemes:
//
//	mem://                 a new, empty in-memory store (memstore), private
//	                       to the caller; gone when closed
//	file:///abs/dir        a directory store (filestore), created if
//	                       missing, shared safely by every process that
//	                       opens the same directory. Query parameters:
//	                       stripes=N (lock stripes of a new store),
//	                       poll=DURATION (WaitChange polling period)
//	s3://bucket/prefix     S3 or an S3-compatible server (s3store). Query
//	                       parameters: endpoint=URL (path-style to that
//	                       server), region=R, create-bucket=1;
//	                       credentials from the AWS
//	                       environment variables and files
//	consul://host:port/prefix
//	                       Consul KV or latchkey serve (consulstore).
//	                       Query parameters: token=ACL token (else
//	                       CONSUL_HTTP_TOKEN), dc=NAME, scheme=https; Open
//	                       refuses a server that is not Consul
//	etcd://[user:password@]host:port[,host:port]/prefix
//	                       etcd v3 (etcdstore). Query parameters: tls=1,
//	                       cacert=FILE (PEM roots; implies TLS)
//	azblob://container/prefix
//	                       Azure Blob Storage or Azurite (azblobstore).
//	                       Query parameters: endpoint=URL (e.g.
//	                       http://127.0.0.1:10000/devstoreaccount1),
//	                       create-container=1;
//	                       credentials from AZURE_STORAGE_CONNECTION_STRING
//	                       or AZURE_STORAGE_ACCOUNT/AZURE_STORAGE_KEY, and
//	                       Azurite's dev account on a loopback endpoint
//	gs://bucket/prefix     Google Cloud Storage or fake-gcs-server
//	                       (gcsstore). Query parameters: endpoint=URL (JSON
//	                       API base, e.g. http://127.0.0.1:4443/storage/v1/),
//	                       no-compare-and-delete=1; else application
//	                       default credentials or STORAGE_EMULATOR_HOST
//
// Other backends add their scheme to the table in this file.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/store"
)

// opener opens one scheme's store from a parsed URL.
type opener func(ctx context.Context, u *url.URL) (store.Store, error)

// openers maps each scheme to its backend: one line per backend.
var openers = map[string]opener{
	"mem":    openMem,
	"file":   openFile,
	"consul": openConsul,
	"s3":     openS3,
	"etcd":   openEtcd,
	"azblob": openAzblob,
	"gs":     openGCS,
}

// Schemes returns the supported URL schemes, sorted.
func Schemes() []string {
	s := make([]string, 0, len(openers))
	for k := range openers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open opens the store that rawURL names. Errors say which URL (with any
// password redacted) and why: a malformed URL, an unknown scheme, a bad
// parameter, or the backend's own failure to open.
func Open(ctx context.Context, rawURL string) (store.Store, error) {
	u, err := url.Parse(rawURL)
	var ue *url.Error
	if errors.As(err, &ue) {
		// ue.Error() quotes the raw URL, password and all.
		return nil, fmt.Errorf("storeurl: malformed URL: %w", ue.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("storeurl: malformed URL: %w", err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("storeurl: %q has no scheme; want one of %s (e.g. file:///var/lib/latchkey)",
			u.Redacted(), strings.Join(Schemes(), ", "))
	}
	open, ok := openers[strings.ToLower(u.Scheme)]
	if !ok {
		return nil, fmt.Errorf("storeurl: %q: unknown scheme %q; want one of %s",
			u.Redacted(), u.Scheme, strings.Join(Schemes(), ", "))
	}
	s, err := open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("storeurl: open %q: %w", u.Redacted(), err)
	}
	return s, nil
}

// flag reads the boolean parameter name: absent, 0 or false is false, 1
// or true is true, anything else an error.
func flag(q url.Values, name string) (bool, error) {
	switch v := q.Get(name); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want 1 or 0", name, v)
	}
}

// httpEndpoint parses the endpoint= parameter ep: an http or https URL
// with a host. want says what the scheme expects, for the error.
func httpEndpoint(ep, want string) (*url.URL, error) {
	e, err := url.Parse(ep)
	if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want %s", ep, want)
	}
	return e, nil
}

// params checks that u's query holds only the allowed keys, each once, and
// returns it.
func params(u *url.URL, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("bad query: %w", err)
	}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, fmt.Errorf("unknown parameter %q (this scheme takes none)", k)
			}
			return nil, fmt.Errorf("unknown parameter %q (want %s)", k, strings.Join(allowed, ", "))
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("parameter %q given %d times", k, len(vs))
		}
	}
	return q, nil
}

// bucketParams is params for an object store's URL,
// SCHEME://BUCKET/prefix, where what names the BUCKET ("bucket",
// "container"): it must be there, and no user info may be.
func bucketParams(u *url.URL, what string, allowed ...string) (url.Values, error) {
	if u.Opaque != "" || u.User != nil {
		return nil, fmt.Errorf("%[1]s:// takes %[1]s://%[2]s/prefix, without user info", u.Scheme, what)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%[1]s:// needs a %[2]s: %[1]s://%[2]s/prefix", u.Scheme, what)
	}
	return params(u, allowed...)
}
