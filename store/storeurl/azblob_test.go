package storeurl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/azblobstore"
	"github.com/latchkey/latchkey/store/storeurl"
)

// TestAzblobURL opens azblob://container/prefix?endpoint=… against the
// Azurite that .ci/run starts, with no AZURE_STORAGE_* variables (the
// loopback endpoint gets Azurite's dev account), and checks the prefix
// scoping.
func TestAzblobURL(t *testing.T) {
	ep := testutil.Peer(t, "LATCHKEY_TEST_AZURITE", "a running Azurite blob endpoint (.ci/run starts one)")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "")
	t.Setenv("AZURE_STORAGE_KEY", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	ctx := context.Background()
	name := testutil.RandomName("lk-url-")
	admin, err := azblobstore.Open(ctx, &azblobstore.Options{ServiceURL: ep, Container: name,
		AccountName: azblobstore.DevAccountName, AccountKey: azblobstore.DevAccountKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Container().Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Container().Delete(context.Background(), nil) })
	s, err := storeurl.Open(ctx, "azblob://"+name+"/jobs?endpoint="+ep)
	testutil.Opened(t, s, err)
	v, err := s.Put(ctx, "a", []byte("x"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	e, err := admin.Get(ctx, "jobs/a")
	if err != nil || string(e.Value) != "x" || e.Version != v {
		t.Fatalf("through the container: %+v, %v; want x@%s", e, err, v)
	}
}

func TestAzblobURLRejects(t *testing.T) {
	t.Setenv("AZURE_STORAGE_ACCOUNT", "")
	t.Setenv("AZURE_STORAGE_KEY", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	for _, tc := range []struct{ url, want string }{
		{"azblob:///p", "needs a container"},
		{"azblob://user@cont/p", "without user info"},
		{"azblob://cont/p", "no Azure account"},
		{"azblob://cont/p?endpoint=ftp://x", "endpoint"},
		{"azblob://cont/p?color=red", `unknown parameter "color"`},
		{"azblob://cont/p?endpoint=http://127.0.0.1:1/x&create-container=yes", "create-container"},
		{"azblob://UPPER/p?endpoint=http://127.0.0.1:1/devstoreaccount1", "container name"},
	} {
		_, err := storeurl.Open(context.Background(), tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
	t.Setenv("AZURE_STORAGE_KEY", "a2V5")
	if _, err := storeurl.Open(context.Background(), "azblob://cont/p?endpoint=http://127.0.0.1:1/x"); err == nil || !strings.Contains(err.Error(), "without AZURE_STORAGE_ACCOUNT") {
		t.Errorf("key without account: %v", err)
	}
}
