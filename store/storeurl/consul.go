package storeurl

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// openConsul opens consul://host:port/prefix: Consul KV (or latchkey
// serve) through the official client. No host means the client's default
// (CONSUL_HTTP_ADDR, else 127.0.0.1:8500). The ACL token is ?token=, else
// CONSUL_HTTP_TOKEN. Other parameters: dc=NAME, scheme=https.
func openConsul(ctx context.Context, u *url.URL) (store.Store, error) {
	if u.Opaque != "" {
		return nil, errors.New("want consul://host:port/prefix")
	}
	if u.User != nil {
		return nil, errors.New("consul URL takes no user; pass the ACL token as ?token= or CONSUL_HTTP_TOKEN")
	}
	q, err := params(u, "token", "dc", "scheme")
	if err != nil {
		return nil, err
	}
	scheme := q.Get("scheme")
	if scheme != "" && scheme != "http" && scheme != "https" {
		return nil, errors.New("scheme=" + scheme + ": want http or https")
	}
	return consulstore.Open(ctx, &consulstore.Options{
		Address:    u.Host,
		Scheme:     scheme,
		Prefix:     strings.TrimPrefix(u.Path, "/"),
		Token:      q.Get("token"),
		Datacenter: q.Get("dc"),
	})
}
