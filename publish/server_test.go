package publish_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/s3store"
)

// serverBackends are latchkey's own server, started in-process for each
// store, reached over HTTP through the Consul KV API (consulstore) and
// the S3 API (s3store, which streams).
func serverBackends() map[string]func(tb testing.TB) store.Store {
	return map[string]func(tb testing.TB) store.Store{
		"server-consul": func(tb testing.TB) store.Store {
			srv := servertest.Start(tb, nil)
			s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: srv.Addr, Prefix: randomName("publish-")})
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
			bucket := randomName("publish-")
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

func randomName(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
