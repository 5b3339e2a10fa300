// Package publishserver runs publish's suite (publish/publishtest) on
// latchkey's own server, in-process, through both of its APIs: a test
// that needs the server lives here, above the library, so that the
// library's packages and their tests do not import it.
package publishserver

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/s3store"
)

// backends are latchkey's own server, started in-process for each store,
// reached over HTTP through the Consul KV API (consulstore) and the S3
// API (s3store, which streams).
func backends() map[string]func(tb testing.TB) store.Store {
	return map[string]func(tb testing.TB) store.Store{
		"server-consul": func(tb testing.TB) store.Store {
			srv := servertest.Start(tb, nil)
			s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: srv.Addr, Prefix: testutil.RandomName("publish-")})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		},
		"server-s3": func(tb testing.TB) store.Store {
			srv := servertest.Start(tb, nil)
			opts := &s3store.Options{Endpoint: srv.URL, Region: "us-east-1",
				Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")}
			bucket := testutil.RandomName("publish-")
			s, err := s3store.Open(context.Background(), bucket, "", opts)
			if err != nil {
				tb.Fatal(err)
			}
			if err := s.CreateBucket(context.Background()); err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// TestSuite runs publishtest on each of the server's APIs.
func TestSuite(t *testing.T) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			publishtest.Run(t, publishtest.Harness{New: open})
		})
	}
}

// BenchmarkPublish100x1MiB is publishtest.Bench through the server's S3
// API (Consul KV values stop at 512 KiB).
func BenchmarkPublish100x1MiB(b *testing.B) {
	publishtest.Bench(b, publishtest.Harness{New: backends()["server-s3"]})
}
