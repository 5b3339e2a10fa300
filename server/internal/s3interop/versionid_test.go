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
// sees no VersionId on PutObject, CopyObject and CompleteMultipartUpload,
// and in a suspended bucket neither (issue 24 item 3: AWS omits it there,
// ceph/s3-tests' test_versioning_bucket_*_upload_return_version_id check
// it), while HeadObject, GetObject and ListObjectVersions report "null".
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
	check("")
	for _, k := range []string{"k", "c", "mp"} {
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String(k)})
		if err != nil || aws.ToString(head.VersionId) != "null" {
			t.Fatalf("HeadObject %s in a suspended bucket: VersionId %q, %v", k, aws.ToString(head.VersionId), err)
		}
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(k)})
		if err != nil || aws.ToString(get.VersionId) != "null" {
			t.Fatalf("GetObject %s in a suspended bucket: VersionId %q, %v", k, aws.ToString(get.VersionId), err)
		}
		get.Body.Close()
	}
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	nulls := 0
	for _, v := range lv.Versions {
		if aws.ToString(v.VersionId) == "null" && aws.ToBool(v.IsLatest) {
			nulls++
		}
	}
	if nulls != 3 {
		t.Fatalf("ListObjectVersions: %d latest \"null\" versions, want 3: %+v", nulls, lv.Versions)
	}
}

// TestSDKRepeatedComplete: aws-sdk-go-v2 repeating a CompleteMultipartUpload
// that already succeeded (a retry after a lost response) gets 200 with the
// same ETag and version; a different part list is NoSuchUpload.
func TestSDKRepeatedComplete(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	key := aws.String("mp")
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, body := range []string{strings.Repeat("p", 5<<20), "last"} {
		r, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: key, UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: r.ETag})
	}
	complete := func(ps []types.CompletedPart) (*s3.CompleteMultipartUploadOutput, error) {
		return c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: ps}})
	}
	first, err := complete(parts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := complete(parts)
	if err != nil {
		t.Fatalf("repeated complete: %v", err)
	}
	if aws.ToString(again.ETag) != aws.ToString(first.ETag) || aws.ToString(again.VersionId) != aws.ToString(first.VersionId) {
		t.Fatalf("repeated complete: %s %s, first %s %s", aws.ToString(again.ETag), aws.ToString(again.VersionId),
			aws.ToString(first.ETag), aws.ToString(first.VersionId))
	}
	_, err = complete(parts[1:])
	wantStatus(t, "complete with another part list", err, 404, "NoSuchUpload")
	vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil || len(vs.Versions) != 1 {
		t.Fatalf("versions after the repeats: %v %d", err, len(vs.Versions))
	}
}
