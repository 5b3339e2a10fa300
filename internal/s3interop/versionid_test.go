package s3interop

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKVersionIDHeader: in a bucket that never had versioning the SDK
// sees no VersionId on PutObject, CopyObject and CompleteMultipartUpload;
// in a suspended bucket it sees "null".
func TestSDKVersionIDHeader(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	check := func(want string) {
		t.Helper()
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("v")})
		if err != nil {
			t.Fatal(err)
		}
		cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("c"), CopySource: aws.String(bucket + "/k")})
		if err != nil {
			t.Fatal(err)
		}
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String("mp")})
		if err != nil {
			t.Fatal(err)
		}
		part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: aws.String("mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
		if err != nil {
			t.Fatal(err)
		}
		done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: aws.String("mp"), UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
		if err != nil {
			t.Fatal(err)
		}
		for op, got := range map[string]*string{"put": put.VersionId, "copy": cp.VersionId, "complete": done.VersionId} {
			if (want == "") != (got == nil) || want != "" && *got != want {
				t.Errorf("%s: VersionId %v, want %q", op, aws.ToString(got), want)
			}
		}
	}
	check("")
	for _, st := range []types.BucketVersioningStatus{types.BucketVersioningStatusEnabled, types.BucketVersioningStatusSuspended} {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &bucket,
			VersioningConfiguration: &types.VersioningConfiguration{Status: st}}); err != nil {
			t.Fatal(err)
		}
	}
	check("null")
}
