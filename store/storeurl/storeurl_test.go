package storeurl_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

func TestOpenMem(t *testing.T) {
	ctx := context.Background()
	s, err := storeurl.Open(ctx, "mem://")
	testutil.Opened(t, s, err)
	if _, err := s.Put(ctx, "a", []byte("1"), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	// Each mem:// is a new store.
	s2, err := storeurl.Open(ctx, "mem://")
	testutil.Opened(t, s2, err)
	if _, err := s2.Get(ctx, "a"); err == nil {
		t.Fatal("a second mem:// store sees the first one's key")
	}
}

func TestOpenFileIsSharedBetweenOpens(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "new", "store")
	u := storeurl.FileURL(dir)
	if !strings.HasPrefix(u, "file:///") {
		t.Fatalf("FileURL(%q) = %q, want file:///...", dir, u)
	}
	a, err := storeurl.Open(ctx, u+"?stripes=4&poll=50ms")
	testutil.Opened(t, a, err)
	if !a.Capabilities().CompareAndSwap {
		t.Fatal("file store does not declare compare-and-swap")
	}
	v, err := a.Put(ctx, "jobs/a", []byte("x"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	b, err := storeurl.Open(ctx, "file://localhost"+filepath.ToSlash(dir))
	testutil.Opened(t, b, err)
	e, err := b.Get(ctx, "jobs/a")
	if err != nil || string(e.Value) != "x" || e.Version != v {
		t.Fatalf("second open: %+v, %v; want x@%s", e, err, v)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := filepath.ToSlash(t.TempDir())
	for _, tc := range []struct{ url, want string }{
		{"", "no scheme"},
		{"/var/lib/latchkey", "no scheme"},
		{"bogus://x", `unknown scheme "bogus"; want one of azblob, consul, etcd, file, gs, mem`},
		{"bogus://user:hunter2@host/p", "unknown scheme"},
		{"mem://somehost", "takes no host"},
		{"mem://?x=1", "unknown parameter"},
		{"file://relative/dir", "only local directories"},
		{"file:relative", "absolute"},
		{"file://", "no directory"},
		{"file://" + dir + "?stripes=0", "stripes"},
		{"file://" + dir + "?stripes=two", "stripes"},
		{"file://" + dir + "?poll=soon", "poll"},
		{"file://" + dir + "?color=red", `unknown parameter "color"`},
		{"file://" + dir + "?stripes=2&stripes=3", "given 2 times"},
		{"%zz", "malformed URL"},
		{"s3://user:hunter2@host/%zz", "malformed URL"},
	} {
		s, err := storeurl.Open(context.Background(), tc.url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error containing %q", tc.url, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "storeurl: ") {
			t.Errorf("Open(%q) = %q, want a storeurl error containing %q", tc.url, err, tc.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) error leaks the password: %q", tc.url, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, "/x/state/latchkey/store"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/latchkey/store"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/latchkey/store"},
		{map[string]string{}, ""},
		{map[string]string{"HOME": "rel"}, ""},
	} {
		got, err := storeurl.DefaultDir(func(k string) string { return tc.env[k] })
		if tc.want == "" {
			if err == nil {
				t.Errorf("DefaultDir(%v) = %q, want an error", tc.env, got)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("DefaultDir(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
	env := map[string]string{"XDG_STATE_HOME": "/x/state"}
	if got, err := storeurl.StateDir(func(k string) string { return env[k] }); err != nil || got != filepath.FromSlash("/x/state/latchkey") {
		t.Errorf("StateDir(%v) = %q, %v; want /x/state/latchkey", env, got, err)
	}
	u, err := storeurl.DefaultURL(func(k string) string { return map[string]string{"HOME": "/home/u"}[k] })
	if err != nil || u != "file:///home/u/.local/state/latchkey/store" {
		t.Errorf("DefaultURL = %q, %v", u, err)
	}
}

// etcd:// on a port where nothing listens fails at Open, at once, saying
// which endpoint refused; it does not hang each request for its timeout.
func TestOpenEtcdRefusedFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = storeurl.Open(context.Background(), "etcd://"+addr+"/app")
	if err == nil || !strings.Contains(err.Error(), "cannot reach etcd ("+addr+": ") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Open on a closed port: %v, want cannot reach etcd naming %s", err, addr)
	}
}
