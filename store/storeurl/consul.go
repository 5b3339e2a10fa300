package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	consul "github.com/hashicorp/consul/api"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// openConsul opens consul://host:port/prefix: Consul KV (or latchkey
// serve) through the official client. No host means the client's default
// (CONSUL_HTTP_ADDR, else 127.0.0.1:8500). The ACL token is ?token=, else
// CONSUL_HTTP_TOKEN. Other parameters: dc=NAME, scheme=https.
func openConsul(ctx context.Context, u *url.URL) (store.Store, error) {
	if u.Opaque != "" || (u.OmitHost && u.Path != "") {
		// consul:host:port or consul:/host:port/prefix
		return nil, errors.New("want consul://host:port/prefix (two slashes), or consul:///prefix for CONSUL_HTTP_ADDR")
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
	if err := checkConsul(ctx, u.Host, scheme, q.Get("token")); err != nil {
		return nil, err
	}
	return consulstore.Open(ctx, &consulstore.Options{
		Address:    u.Host,
		Scheme:     scheme,
		Prefix:     strings.TrimPrefix(u.Path, "/"),
		Token:      q.Get("token"),
		Datacenter: q.Get("dc"),
	})
}

// checkConsul asks the server for its Raft leader (GET /v1/status/leader,
// which needs no ACL) so that a URL pointing at something other than
// Consul (a web server answering 404 to every key) is refused at Open
// rather than read as "no key exists". An unreachable server is left to
// the first operation to report.
func checkConsul(ctx context.Context, addr, scheme, token string) error {
	cfg := consul.DefaultConfig()
	if addr != "" {
		cfg.Address = addr
	}
	if scheme != "" {
		cfg.Scheme = scheme
	}
	cfg.Token = token
	c, err := consul.NewClient(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = c.Status().LeaderWithQueryOptions((&consul.QueryOptions{}).WithContext(ctx))
	var ue *url.Error
	var se consul.StatusError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && se.Code == 403:
		return nil // an ACL'd Consul; operations say what the token lacks
	case errors.As(err, &ue) && !errors.As(err, &se):
		return nil // unreachable: the operations report it
	}
	return fmt.Errorf("%s does not look like Consul: GET /v1/status/leader: %v (want Consul's HTTP API or latchkey serve, e.g. consul://127.0.0.1:8500/prefix)", cfg.Address, err)
}
