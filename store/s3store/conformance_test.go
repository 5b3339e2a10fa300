package s3store_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
	"github.com/latchkey/latchkey/store/storetest"
)

// peer is one S3 implementation the store is tested against.
type peer struct {
	name              string
	endpoint          string
	accessKey, secret string
	noCAD             bool // the peer's conditional DELETE is not AWS-exact
}

// latchkeyPeer starts our own server in-process.
func latchkeyPeer(t testing.TB) peer {
	srv := servertest.Start(t, nil)
	return peer{name: "latchkey", endpoint: srv.URL, accessKey: srv.AccessKey, secret: srv.SecretKey}
}

// versityPeer is the Versity Gateway that .ci/run starts (testutil.Peer:
// without it the test skips, and fails under CI=true).
func versityPeer(t testing.TB) peer {
	t.Helper()
	return peer{name: "versitygw",
		endpoint:  testutil.Peer(t, "LATCHKEY_TEST_VERSITYGW", "a running Versity Gateway's URL (.ci/run starts one)"),
		accessKey: testutil.Peer(t, "LATCHKEY_TEST_VERSITYGW_ACCESS_KEY", "the Versity Gateway's root access key (.ci/run sets it)"),
		secret:    testutil.Peer(t, "LATCHKEY_TEST_VERSITYGW_SECRET_KEY", "the Versity Gateway's root secret key (.ci/run sets it)"),
		noCAD:     true}
}

func (p peer) options() *s3store.Options {
	return &s3store.Options{
		Endpoint:           p.endpoint,
		Region:             "us-east-1",
		Credentials:        credentials.NewStaticCredentialsProvider(p.accessKey, p.secret, ""),
		NoCompareAndDelete: p.noCAD,
	}
}

// sdk is aws-sdk-go-v2's S3 client of the peer: a reader and writer of
// the bucket's objects independent of the store's own client.
func (p peer) sdk() *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(p.endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(p.accessKey, p.secret, "")})
}

// bucket creates a fresh bucket on the peer.
func (p peer) bucket(t testing.TB) string {
	t.Helper()
	name := testutil.RandomName("lk-test-")
	s, err := s3store.Open(context.Background(), name, "", p.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(context.Background()); err != nil {
		t.Fatalf("%s: create bucket %s: %v", p.name, name, err)
	}
	return name
}

// open returns a store on a fresh bucket of the peer, with no key prefix
// (a prefix would shorten the longest key below store.MaxKeyLen).
func (p peer) open(tb testing.TB) *s3store.Store {
	tb.Helper()
	s, err := s3store.Open(context.Background(), p.bucket(tb), "", p.options())
	testutil.Opened(tb, s, err)
	return s
}

func runConformance(t *testing.T, p peer) {
	p.bucket(t) // fails (or skips) early when the peer is not usable
	storetest.Run(t, storetest.Harness{
		New:   func(tb testing.TB) store.Store { return p.open(tb) },
		Scale: 0.5,
	})
}

func TestConformanceLatchkey(t *testing.T) { runConformance(t, latchkeyPeer(t)) }

func TestConformanceVersityGW(t *testing.T) {
	p := versityPeer(t)
	logVersityFaults(t)
	runConformance(t, p)
}
