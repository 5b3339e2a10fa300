package storeurl

import (
	"context"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/gcsstore"
)

// openGCS opens gs://bucket/prefix?endpoint=URL (gcsstore). With no
// endpoint the client uses application default credentials, or the
// emulator STORAGE_EMULATOR_HOST names. endpoint= is a JSON API base URL
// (e.g. http://127.0.0.1:4443/storage/v1/ for fake-gcs-server), reached
// without authentication. no-compare-and-delete=1 declares a server that
// ignores delete preconditions (fake-gcs-server).
func openGCS(ctx context.Context, u *url.URL) (store.Store, error) {
	q, err := bucketParams(u, "bucket", "endpoint", "no-compare-and-delete")
	if err != nil {
		return nil, err
	}
	opts := &gcsstore.Options{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/"), Endpoint: q.Get("endpoint")}
	if ep := opts.Endpoint; ep != "" {
		e, err := httpEndpoint(ep, "http://host:port/storage/v1/ or https://host/storage/v1/")
		if err != nil {
			return nil, err
		}
		if e.Path == "" || e.Path == "/" {
			// The JSON API lives under /storage/v1/; accept the bare
			// server address as a convenience.
			e.Path = "/storage/v1/"
			opts.Endpoint = e.String()
		}
	}
	if opts.NoCompareAndDelete, err = flag(q, "no-compare-and-delete"); err != nil {
		return nil, err
	}
	return gcsstore.Open(ctx, opts)
}
