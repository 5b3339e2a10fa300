package s3api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// BenchmarkConditionalPut4KSDK is BenchmarkConditionalPut4K through
// aws-sdk-go-v2 (SigV4-signed, verified), so that the same client can be
// pointed at another S3 implementation for a side-by-side ratio: set
// LATCHKEY_BENCH_S3_ENDPOINT, LATCHKEY_BENCH_S3_ACCESS_KEY and
// LATCHKEY_BENCH_S3_SECRET_KEY to add a "peer" target.
func BenchmarkConditionalPut4KSDK(b *testing.B) {
	type target struct{ name, endpoint, ak, sk string }
	targets := []target{{name: "latchkey"}}
	if ep := os.Getenv("LATCHKEY_BENCH_S3_ENDPOINT"); ep != "" {
		targets = append(targets, target{"peer", ep, os.Getenv("LATCHKEY_BENCH_S3_ACCESS_KEY"), os.Getenv("LATCHKEY_BENCH_S3_SECRET_KEY")})
	}
	for _, tg := range targets {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", tg.name, clients), func(b *testing.B) {
				tg := tg // each run starts its own in-process server
				if tg.endpoint == "" {
					e, err := engine.Open(b.TempDir(), nil)
					if err != nil {
						b.Fatal(err)
					}
					tg.ak, tg.sk = "AKIDBENCH", "bench-secret"
					srv := httptest.NewServer(MustNew(e, &Options{Auth: sigv4.New(sigv4.Credentials{tg.ak: tg.sk}.Lookup, nil)}))
					b.Cleanup(func() { srv.Close(); e.Close() })
					tg.endpoint = srv.URL
				}
				tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
				b.Cleanup(tr.CloseIdleConnections)
				c := s3.New(s3.Options{
					Region: "us-east-1", BaseEndpoint: aws.String(tg.endpoint), UsePathStyle: true,
					HTTPClient: &http.Client{Transport: tr}, Retryer: aws.NopRetryer{},
					Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
						return aws.Credentials{AccessKeyID: tg.ak, SecretAccessKey: tg.sk}, nil
					}),
				})
				ctx := context.Background()
				var rnd [4]byte
				_, _ = rand.Read(rnd[:])
				bucket := "bench-" + hex.EncodeToString(rnd[:])
				if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
					b.Fatal(err)
				}
				body := bytes.Repeat([]byte("x"), 4096)
				benchPuts(b, clients, func(i int64) error {
					_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(fmt.Sprintf("k%d", i)),
						Body: bytes.NewReader(body), IfNoneMatch: aws.String("*")})
					return err
				})
			})
		}
	}
}
