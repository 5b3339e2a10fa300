package consulstore_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// consul://host:port/prefix?token=… through storeurl, against the full
// server with an ACL token.
func TestStoreURL(t *testing.T) {
	ctx := context.Background()
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{ACLToken: "tok"}})
	s, err := storeurl.Open(ctx, "consul://"+srv.Addr+"/app/locks?token=tok")
	testutil.Opened(t, s, err)
	v, err := s.Put(ctx, "a", []byte("1"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, "a")
	if err != nil || e.Version != v || string(e.Value) != "1" {
		t.Fatalf("Get = %+v, %v; want 1@%s", e, err, v)
	}
	// The key lives under the URL's prefix.
	other, err := storeurl.Open(ctx, "consul://"+srv.Addr+"/app?token=tok")
	testutil.Opened(t, other, err)
	if e, err := other.Get(ctx, "locks/a"); err != nil || e.Version != v {
		t.Fatalf("Get under the parent prefix = %+v, %v", e, err)
	}
	// Without the token: permission denied.
	t.Setenv("CONSUL_HTTP_TOKEN", "")
	anon, err := storeurl.Open(ctx, "consul://"+srv.Addr+"/app")
	testutil.Opened(t, anon, err)
	if _, err := anon.Get(ctx, "locks/a"); !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Get without a token: %v", err)
	}
	// CONSUL_HTTP_TOKEN is honoured when the URL has none.
	t.Setenv("CONSUL_HTTP_TOKEN", "tok")
	env, err := storeurl.Open(ctx, "consul://"+srv.Addr+"/app")
	testutil.Opened(t, env, err)
	if _, err := env.Get(ctx, "locks/a"); err != nil {
		t.Fatalf("Get with CONSUL_HTTP_TOKEN: %v", err)
	}
	// Without a host, the official client's CONSUL_HTTP_ADDR names it.
	t.Setenv("CONSUL_HTTP_ADDR", srv.Addr)
	byEnv, err := storeurl.Open(ctx, "consul:///app")
	testutil.Opened(t, byEnv, err)
	if e, err := byEnv.Get(ctx, "locks/a"); err != nil || e.Version != v {
		t.Fatalf("Get through CONSUL_HTTP_ADDR = %+v, %v", e, err)
	}
	for _, bad := range []string{"consul://h:1/p?bogus=1", "consul://u@h:1/p", "consul://h:1/p?scheme=ftp", "consul://h:1/a//b"} {
		if s, err := storeurl.Open(ctx, bad); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// consul://h1,h2/prefix: several addresses of one cluster; with the first
// dead (nothing listens), Open succeeds and requests go to the next. An
// empty host in the list is refused.
func TestStoreURLSeveralHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := servertest.Start(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	s, err := storeurl.Open(ctx, "consul://"+dead+","+srv.Addr+"/app")
	testutil.Opened(t, s, err)
	for i := range 3 {
		if _, err := s.Put(ctx, "k", []byte{byte(i)}, store.Unconditional); err != nil {
			t.Fatalf("Put %d with the first host dead: %v", i, err)
		}
	}
	if e, err := s.Get(ctx, "k"); err != nil || string(e.Value) != "\x02" {
		t.Fatalf("Get = %+v, %v", e, err)
	}
	if s, err := storeurl.Open(ctx, "consul://"+srv.Addr+",/app"); err == nil {
		s.Close()
		t.Fatal("an empty host in the list was accepted")
	}
}
