package gcsstore_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store/gcsstore"
	"github.com/latchkey/latchkey/store/internal/faultproxy"
)

// TestFaultProxyWrites runs every write through faultproxy.CheckWrites
// against fake-gcs-server: the answer dropped after the emulator applied
// the write, and the request delivered late, after the store's HTTP
// client timed out and resolved it, with another writer in between.
func TestFaultProxyWrites(t *testing.T) {
	e := startedEmulator(t)
	bucket := e.bucket(t)
	base := strings.TrimSuffix(e.endpoint, "/storage/v1/")
	proxy := faultproxy.NewHTTP(t, base)
	prefix := testutil.RandomName("fp-")
	open := func(endpoint string, hc *http.Client) *gcsstore.Store {
		o := &gcsstore.Options{Bucket: bucket, Prefix: prefix, Endpoint: endpoint, NoCompareAndDelete: true, ResolveBackoff: time.Millisecond}
		if hc != nil {
			o.HTTPClient = hc
		}
		s, err := gcsstore.Open(context.Background(), o)
		testutil.Opened(t, s, err)
		return s
	}
	via := open(proxy.URL+"/storage/v1/", &http.Client{Timeout: 300 * time.Millisecond})
	direct := open(e.endpoint, nil)
	faultproxy.CheckWrites(t, faultproxy.Writes{Via: via, Direct: direct, Faults: proxy})
}
