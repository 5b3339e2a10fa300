package s3interop

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"

	"github.com/latchkey/latchkey/internal/testutil"
)

// TestSDKAbsentBucketConfig is issue 24 item 4: reading a bucket
// configuration the server does not keep answers AWS's 404 for a bucket
// without one, not 501. mc stat read 501 from ?policy as "Anonymous:
// Enabled"; minio-go reads NoSuchBucketPolicy as "no policy" (private).
func TestSDKAbsentBucketConfig(t *testing.T) {
	srv, c, bucket := start(t)
	ctx := context.Background()
	b := &bucket
	for _, tc := range []struct {
		op   string
		code string
		call func() error
	}{
		{"GetBucketPolicy", "NoSuchBucketPolicy", func() error { _, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b}); return err }},
		{"GetBucketPolicyStatus", "NoSuchBucketPolicy", func() error {
			_, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
			return err
		}},
		{"GetObjectLockConfiguration", "ObjectLockConfigurationNotFoundError", func() error {
			_, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: b})
			return err
		}},
		{"GetBucketCors", "NoSuchCORSConfiguration", func() error { _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b}); return err }},
		{"GetBucketLifecycleConfiguration", "NoSuchLifecycleConfiguration", func() error {
			_, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: b})
			return err
		}},
		{"GetBucketWebsite", "NoSuchWebsiteConfiguration", func() error { _, err := c.GetBucketWebsite(ctx, &s3.GetBucketWebsiteInput{Bucket: b}); return err }},
		{"GetBucketTagging", "NoSuchTagSet", func() error { _, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b}); return err }},
		{"GetBucketReplication", "ReplicationConfigurationNotFoundError", func() error {
			_, err := c.GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: b})
			return err
		}},
	} {
		wantStatus(t, tc.op, tc.call(), 404, tc.code)
	}
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: b}); err != nil {
		t.Fatalf("DeleteBucketPolicy of a bucket without one: %v", err)
	}
	_, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket + "-none")})
	wantStatus(t, "GetBucketPolicy of a missing bucket", err, 404, "NoSuchBucket")
	_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(`{"Version":"2012-10-17","Statement":[]}`)})
	wantStatus(t, "PutBucketPolicy", err, 501, "NotImplemented")

	mc := minioClient(t, srv, srv.AccessKey, srv.SecretKey, false)
	if p, err := mc.GetBucketPolicy(ctx, bucket); err != nil || p != "" {
		t.Fatalf("minio-go GetBucketPolicy: %q %v (mc stat reads this as the bucket's anonymous access)", p, err)
	}
	if _, _, _, _, err := mc.GetObjectLockConfig(ctx, bucket); minio.ToErrorResponse(err).Code != "ObjectLockConfigurationNotFoundError" {
		t.Fatalf("minio-go GetObjectLockConfig: %v", err)
	}
}

// TestSDKListBucketsPages: ListBuckets honours max-buckets and
// continuation-token (and prefix): aws-sdk-go-v2's paginator walks every
// bucket exactly once, in name order.
func TestSDKListBucketsPages(t *testing.T) {
	_, c, first := start(t)
	ctx := context.Background()
	prefix := testutil.RandomName("pages-")
	var want []string
	for i := range 5 {
		name := prefix + string(rune('a'+i))
		want = append(want, name)
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	pages := 0
	p := s3.NewListBucketsPaginator(c, &s3.ListBucketsInput{MaxBuckets: aws.Int32(2), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Buckets) > 2 {
			t.Fatalf("page of %d buckets with max-buckets 2", len(out.Buckets))
		}
		for _, b := range out.Buckets {
			got = append(got, aws.ToString(b.Name))
		}
		pages++
	}
	if pages != 3 || len(got) != 5 || got[0] != want[0] || got[4] != want[4] {
		t.Fatalf("%d pages %v, want 3 pages %v", pages, got, want)
	}
	all, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(all.Buckets) != 6 || all.ContinuationToken != nil {
		t.Fatalf("ListBuckets without max-buckets: %d buckets (want 6 with %s), token %v, %v", len(all.Buckets), first, all.ContinuationToken, err)
	}
	_, err = c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(2), ContinuationToken: aws.String("not a token")})
	wantStatus(t, "bad continuation token", err, 400, "InvalidArgument")
	_, err = c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(10001)})
	wantStatus(t, "max-buckets 10001", err, 400, "InvalidArgument")
}
