package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

// openS3 opens s3://bucket/prefix?endpoint=URL&region=R (s3store).
// Credentials come from the standard AWS environment variables and files.
// With endpoint set, requests go path-style to that server.
// no-compare-and-delete=1 declares a server whose conditional DELETE is not
// AWS-exact (Versity Gateway).
func openS3(ctx context.Context, u *url.URL) (store.Store, error) {
	if u.Opaque != "" || u.User != nil {
		return nil, errors.New("s3:// takes s3://bucket/prefix, without user info")
	}
	if u.Host == "" {
		return nil, errors.New("s3:// needs a bucket: s3://bucket/prefix")
	}
	q, err := params(u, "endpoint", "region", "no-compare-and-delete")
	if err != nil {
		return nil, err
	}
	opts := &s3store.Options{Endpoint: q.Get("endpoint"), Region: q.Get("region")}
	if ep := opts.Endpoint; ep != "" {
		e, err := url.Parse(ep)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, fmt.Errorf("endpoint %q: want http://host:port or https://host", ep)
		}
	}
	switch q.Get("no-compare-and-delete") {
	case "", "0", "false":
	case "1", "true":
		opts.NoCompareAndDelete = true
	default:
		return nil, fmt.Errorf("no-compare-and-delete=%q: want 1 or 0", q.Get("no-compare-and-delete"))
	}
	return s3store.Open(ctx, u.Host, strings.TrimPrefix(u.Path, "/"), opts)
}
