package azblobstore_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store/azblobstore"
	"github.com/latchkey/latchkey/store/internal/faultproxy"
)

// TestFaultProxyWrites runs every write through faultproxy.CheckWrites
// against Azurite: the answer dropped after the emulator applied the
// write, and the request delivered late, after the store's HTTP client
// timed out and resolved it, with another writer in between.
func TestFaultProxyWrites(t *testing.T) {
	u := azurite(t)
	c := newContainer(t, u)
	su, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.NewHTTP(t, su.Scheme+"://"+su.Host)
	prefix := testutil.RandomName("fp-")
	o := options(proxy.URL+su.Path, c, prefix)
	o.Transport = &http.Client{Timeout: 300 * time.Millisecond}
	via, err := azblobstore.Open(context.Background(), o)
	testutil.Opened(t, via, err)
	direct, err := azblobstore.Open(context.Background(), options(u, c, prefix))
	testutil.Opened(t, direct, err)
	faultproxy.CheckWrites(t, faultproxy.Writes{Via: via, Direct: direct, Faults: proxy})
}
