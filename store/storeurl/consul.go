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

// openConsul opens consul://host:port[,host:port…]/prefix: Consul KV (or
// latchkey serve) through the official client. Several hosts are agents
// or servers of one cluster: requests go to the first and move on to the
// next when it fails (consulstore.Options.Addresses). No host means the
// client's default (CONSUL_HTTP_ADDR, else 127.0.0.1:8500). The ACL token
// is ?token=, else CONSUL_HTTP_TOKEN. Other parameters: dc=NAME,
// scheme=https.
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
	var hosts []string
	if u.Host != "" {
		hosts = strings.Split(u.Host, ",")
	}
	for _, h := range hosts {
		if h == "" {
			return nil, errors.New("empty host in the list: want consul://h1:8500,h2:8500/prefix")
		}
	}
	if err := checkConsulAny(ctx, hosts, scheme, q.Get("token")); err != nil {
		return nil, err
	}
	o := &consulstore.Options{
		Scheme:     scheme,
		Prefix:     strings.TrimPrefix(u.Path, "/"),
		Token:      q.Get("token"),
		Datacenter: q.Get("dc"),
	}
	if len(hosts) > 0 {
		o.Address, o.Addresses = hosts[0], hosts[1:]
	}
	return consulstore.Open(ctx, o)
}

// checkConsulAny runs checkConsul on every host (the default address
// when there is none): each must answer like Consul or be unreachable
// for now; one that answers but is not Consul is an error.
func checkConsulAny(ctx context.Context, hosts []string, scheme, token string) error {
	if len(hosts) == 0 {
		return checkConsul(ctx, "", scheme, token)
	}
	for _, h := range hosts {
		if err := checkConsul(ctx, h, scheme, token); err != nil {
			return err
		}
	}
	return nil
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
	// One request: leave no idle connection behind in a transport nobody
	// will use again.
	defer cfg.Transport.CloseIdleConnections()
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
