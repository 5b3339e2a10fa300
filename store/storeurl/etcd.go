package storeurl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/etcdstore"
)

// openEtcd opens etcd://[user:password@]host:port[,host:port…]/prefix
// (etcdstore). User info, when given, authenticates with etcd's auth.
// tls=1 speaks TLS to every endpoint (system roots); cacert=FILE trusts
// the PEM certificates in FILE instead, and implies tls=1. Open fails
// within a few seconds when no endpoint accepts a connection.
func openEtcd(ctx context.Context, u *url.URL) (store.Store, error) {
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("want etcd://host:port[,host:port]/prefix")
	}
	q, err := params(u, "tls", "cacert")
	if err != nil {
		return nil, err
	}
	opts := &etcdstore.Options{Prefix: strings.TrimPrefix(u.Path, "/")}
	for _, ep := range strings.Split(u.Host, ",") {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return nil, fmt.Errorf("endpoint %q: want host:port", ep)
		}
		opts.Endpoints = append(opts.Endpoints, ep)
	}
	if u.User != nil {
		pw, ok := u.User.Password()
		if u.User.Username() == "" || !ok || pw == "" {
			return nil, errors.New("etcd auth needs both a user and a password: etcd://user:password@host:port/prefix")
		}
		opts.Username, opts.Password = u.User.Username(), pw
	}
	if on, err := flag(q, "tls"); err != nil {
		return nil, err
	} else if on {
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if f := q.Get("cacert"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cacert %q: no PEM certificate", f)
		}
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	s, err := etcdstore.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := dialAny(ctx, opts.Endpoints, etcdDialTimeout); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// etcdDialTimeout bounds the connection check of an etcd:// URL: etcd's
// client waits for a connection rather than failing, so a wrong port
// would otherwise hang each request for its whole timeout.
const etcdDialTimeout = 3 * time.Second

// dialAny checks that at least one endpoint accepts a TCP connection
// within timeout, and says which endpoints failed and why otherwise.
func dialAny(ctx context.Context, endpoints []string, timeout time.Duration) error {
	var errs []string
	d := net.Dialer{Timeout: timeout}
	for _, ep := range endpoints {
		c, err := d.DialContext(ctx, "tcp", ep)
		if err == nil {
			c.Close()
			return nil
		}
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		errs = append(errs, ep+": "+err.Error())
	}
	return fmt.Errorf("cannot reach etcd (%s)", strings.Join(errs, "; "))
}
