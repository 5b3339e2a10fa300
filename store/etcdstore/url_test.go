package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/etcdstore"
	"github.com/latchkey/latchkey/store/storeurl"
)

func open(t *testing.T, u string) store.Store {
	t.Helper()
	s, err := storeurl.Open(context.Background(), u)
	testutil.Opened(t, s, err)
	return s
}

// etcd://host:port[,host:port]/prefix through storeurl, against the
// embedded etcd.
func TestStoreURL(t *testing.T) {
	ctx := t.Context()
	ep := etcdstore.EmbeddedEndpoint()
	s := open(t, "etcd://"+ep+"/url-test/locks")
	if !s.Capabilities().Transactions || !s.Capabilities().Watch {
		t.Fatalf("capabilities %+v", s.Capabilities())
	}
	v, err := s.Put(ctx, "a", []byte("1"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	// The key lives under the URL's prefix; two endpoints (the same
	// server twice) name the same cluster.
	other := open(t, "etcd://"+ep+","+ep+"/url-test")
	if e, err := other.Get(ctx, "locks/a"); err != nil || e.Version != v {
		t.Fatalf("Get under the parent prefix = %+v, %v", e, err)
	}
	// A sibling prefix sharing the name's start sees nothing.
	sib := open(t, "etcd://"+ep+"/url-test/lock")
	if p, err := sib.List(ctx, "", nil); err != nil || len(p.Items) != 0 {
		t.Fatalf("List of a sibling prefix = %+v, %v", p, err)
	}
	for _, bad := range []string{"etcd:///p", "etcd://h/p", "etcd://h:1,/p", "etcd://h:1/p?bogus=1",
		"etcd://u@h:1/p", "etcd://h:1/p?tls=maybe", "etcd://h:1/a//b", "etcd://h:1/p?cacert=/nonexistent"} {
		if s, err := storeurl.Open(ctx, bad); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// User info in the URL authenticates; the password never appears in an
// error.
func TestStoreURLAuth(t *testing.T) {
	ep := etcdstore.StartAuthEtcd(t)
	ctx := t.Context()
	s := open(t, "etcd://alice:pw@"+ep+"/app")
	if _, err := s.Put(ctx, "k", []byte("1"), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	_, err := storeurl.Open(ctx, "etcd://alice:s3cret@"+ep+"/app")
	if !errors.Is(err, etcdstore.ErrPermissionDenied) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open with a wrong password: %v", err)
	}
}

// Every endpoint of an etcd:// URL reaches the client: with the first one
// dead (nothing listens there), operations go to the next.
func TestStoreURLEveryEndpoint(t *testing.T) {
	dead := testutil.DeadAddr(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := open(t, "etcd://"+dead+","+etcdstore.EmbeddedEndpoint()+"/url-endpoints")
	for i := range 5 {
		if _, err := s.Put(ctx, "k", []byte{byte(i)}, store.Unconditional); err != nil {
			t.Fatalf("put %d with the first endpoint dead: %v", i, err)
		}
	}
	if e, err := s.Get(ctx, "k"); err != nil || string(e.Value) != "\x04" {
		t.Fatalf("Get = %+v, %v", e, err)
	}
}
