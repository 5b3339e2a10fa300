package s3interop

import (
	"bytes"
	"context"
	_ "embed"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
)

//go:embed testdata/boto3_vhost.py
var boto3VhostScript []byte

// hostRecorder sends every request to the server's address whatever its
// Host (so BUCKET.localhost needs no resolver) and records the hosts.
type hostRecorder struct {
	addr  string
	mu    sync.Mutex
	hosts []string
	rt    http.RoundTripper
}

func newHostRecorder(addr string) *hostRecorder {
	hr := &hostRecorder{addr: addr}
	hr.rt = &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	return hr
}

func (hr *hostRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	hr.mu.Lock()
	hr.hosts = append(hr.hosts, r.URL.Host)
	hr.mu.Unlock()
	return hr.rt.RoundTrip(r)
}

// TestSDKVirtualHosted: with `serve --s3-domain localhost`, aws-sdk-go-v2
// in its default virtual-hosted style (BUCKET.localhost:PORT) creates a
// bucket, writes, lists and reads keys, including one that looks like a
// Consul path; path style keeps working next to it.
func TestSDKVirtualHosted(t *testing.T) {
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{S3Domain: "localhost"}})
	_, port, _ := net.SplitHostPort(srv.Addr)
	hr := newHostRecorder(srv.Addr)
	base := sdkClient(t, srv, srv.AccessKey, srv.SecretKey)
	c := s3.New(base.Options(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String("http://localhost:" + port)
		o.UsePathStyle = false
		o.HTTPClient = &http.Client{Transport: hr}
	})
	ctx := context.Background()
	bucket := testutil.RandomName("vhost-")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"plain", "v1/kv/looks-like-consul", "-/health", "dir/with space"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader("body of " + key)}); err != nil {
			t.Fatalf("PutObject %q: %v", key, err)
		}
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject %q: %v", key, err)
		}
		b, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if string(b) != "body of "+key {
			t.Fatalf("GetObject %q: %q", key, b)
		}
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil || len(list.Contents) != 4 {
		t.Fatalf("ListObjectsV2: %v %d", err, len(list.Contents))
	}
	for _, h := range hr.hosts {
		if h != bucket+".localhost:"+port {
			t.Fatalf("a request went to %q, not virtual-hosted %s.localhost:%s", h, bucket, port)
		}
	}
	// Path style on the same server sees the same objects.
	got, err := base.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("v1/kv/looks-like-consul")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(b, []byte("body of v1/kv/looks-like-consul")) {
		t.Fatalf("path style: %q", b)
	}
}

// TestBoto3VirtualHosted runs testdata/boto3_vhost.py: boto3 with
// addressing_style "virtual" against --s3-domain localhost.
func TestBoto3VirtualHosted(t *testing.T) {
	py := boto3Python(t)
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{S3Domain: "localhost"}})
	_, port, _ := net.SplitHostPort(srv.Addr)
	runCheckScript(t, py, "boto3_vhost.py", boto3VhostScript, 2, "http://localhost:"+port, srv.AccessKey, srv.SecretKey)
}
