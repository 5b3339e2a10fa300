package storeurl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
	"github.com/latchkey/latchkey/store/storeurl"
)

func TestOpenS3(t *testing.T) {
	srv := servertest.Start(t, nil)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	ctx := context.Background()
	s, err := storeurl.Open(ctx, "s3://urlbucket/jobs/x?endpoint="+srv.URL+"&region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.(*s3store.Store).Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("urlbucket")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "a", []byte("1"), store.IfAbsent); err != nil {
		t.Fatalf("Put through s3://: %v", err)
	}
	if _, err := s.(*s3store.Store).Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("urlbucket"), Key: aws.String("jobs/x/a")}); err != nil {
		t.Fatalf("object not under the URL's prefix: %v", err)
	}
	for _, bad := range []string{"s3:///nobucket", "s3://b/p?endpoint=ftp://x", "s3://b/p?colour=red", "s3://b/p?no-compare-and-delete=maybe"} {
		if _, err := storeurl.Open(ctx, bad); err == nil || !strings.Contains(err.Error(), "storeurl") {
			t.Errorf("Open(%q) = %v, want a storeurl error", bad, err)
		}
	}
}
