package storeurl

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/azblobstore"
)

// openAzblob opens azblob://container/prefix[?endpoint=URL] (azblobstore).
// The container must exist, unless create-container=1 asks Open to create
// it. Credentials, in this order:
//
//   - endpoint given: AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (shared
//     key); when neither is set and the endpoint is on loopback, Azurite's
//     well-known development account (devstoreaccount1); otherwise none
//     (a SAS in the endpoint's query, or a public container);
//   - no endpoint: AZURE_STORAGE_CONNECTION_STRING, else
//     AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY against
//     https://ACCOUNT.blob.core.windows.net/.
func openAzblob(ctx context.Context, u *url.URL) (store.Store, error) {
	if u.User != nil {
		return nil, errors.New("azblob:// takes azblob://container/prefix, without user info; credentials come from AZURE_STORAGE_* variables")
	}
	q, err := bucketParams(u, "container", "endpoint", "create-container")
	if err != nil {
		return nil, err
	}
	create, err := flag(q, "create-container")
	if err != nil {
		return nil, err
	}
	opts := &azblobstore.Options{Container: u.Host, Prefix: strings.TrimPrefix(u.Path, "/"), CreateContainer: create,
		AccountName: os.Getenv("AZURE_STORAGE_ACCOUNT"), AccountKey: os.Getenv("AZURE_STORAGE_KEY")}
	if opts.AccountKey != "" && opts.AccountName == "" {
		return nil, errors.New("AZURE_STORAGE_KEY is set without AZURE_STORAGE_ACCOUNT")
	}
	ep := q.Get("endpoint")
	switch {
	case ep != "":
		e, err := httpEndpoint(ep, "http(s)://host[:port][/account], e.g. http://127.0.0.1:10000/devstoreaccount1")
		if err != nil {
			return nil, err
		}
		opts.ServiceURL = ep
		if opts.AccountName == "" && loopback(e.Hostname()) {
			opts.AccountName, opts.AccountKey = azblobstore.DevAccountName, azblobstore.DevAccountKey
		}
	case os.Getenv("AZURE_STORAGE_CONNECTION_STRING") != "":
		opts.ConnectionString = os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
		opts.AccountName, opts.AccountKey = "", ""
	case opts.AccountName == "":
		return nil, errors.New("no Azure account: pass ?endpoint=URL, or set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY")
	}
	return azblobstore.Open(ctx, opts)
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
