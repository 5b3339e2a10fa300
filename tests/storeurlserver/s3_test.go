// Package storeurlserver opens s3:// URLs (package storeurl) against
// latchkey's own server in-process: a test that needs the server lives
// here, above the library, so that storeurl's own tests do not import it.
package storeurlserver

import (
	"context"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
	"github.com/latchkey/latchkey/store/storeurl"
)

func TestOpenS3(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	s, err := storeurl.Open(ctx, "s3://urlbucket/jobs/x?endpoint="+srv.URL+"&region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.(*s3store.Store).CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "a", []byte("1"), store.IfAbsent); err != nil {
		t.Fatalf("Put through s3://: %v", err)
	}
	root, err := s3store.Open(ctx, "urlbucket", "", &s3store.Options{Endpoint: srv.URL, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Get(ctx, "jobs/x/a"); err != nil {
		t.Fatalf("object not under the URL's prefix: %v", err)
	}
	for _, bad := range []string{"s3:///nobucket", "s3://b/p?endpoint=ftp://x", "s3://b/p?colour=red", "s3://b/p?no-compare-and-delete=maybe"} {
		if _, err := storeurl.Open(ctx, bad); err == nil || !strings.Contains(err.Error(), "storeurl") {
			t.Errorf("Open(%q) = %v, want a storeurl error", bad, err)
		}
	}
}

// create-bucket=1 creates a missing bucket (and accepts one that exists),
// and AWS_ENDPOINT_URL stands for endpoint=, as for the AWS CLI.
func TestOpenS3CreateBucket(t *testing.T) {
	srv := startServer(t)
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	ctx := context.Background()
	if s, err := storeurl.Open(ctx, "s3://fresh-bucket/app"); err != nil {
		t.Fatal(err)
	} else if _, err := s.Put(ctx, "a", []byte("1"), store.IfAbsent); err == nil {
		t.Fatal("Put into a bucket that does not exist succeeded")
	}
	for range 2 { // the second time the bucket exists
		s, err := storeurl.Open(ctx, "s3://fresh-bucket/app?create-bucket=1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "a", []byte("1"), store.Unconditional); err != nil {
			t.Fatalf("Put after create-bucket=1: %v", err)
		}
	}
	if _, err := storeurl.Open(ctx, "s3://b/p?create-bucket=maybe"); err == nil {
		t.Fatal("create-bucket=maybe accepted")
	}
}

// Without credentials, Open says so in one line, naming what to set.
func TestOpenS3NoCredentials(t *testing.T) {
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1") // refused at once
	_, err := storeurl.Open(context.Background(), "s3://bucket/p?endpoint=http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("Open without credentials: %v", err)
	}
}

// startServer starts the server and points the AWS SDK's environment at
// its credentials, and at nothing else: no config or credentials file.
func startServer(t *testing.T) *servertest.Server {
	srv := servertest.Start(t, nil)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	return srv
}
