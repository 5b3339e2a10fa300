package s3interop

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKDetails checks, through the real SDK, details that other
// S3-compatible servers get wrong: 304 with its ETag, unquoted validators,
// the GET/HEAD ladder's order, Range and 416, empty metadata values,
// errors for missing buckets and keys, copy-source conditions, per-key
// DeleteObjects errors, url-encoded listings.
func TestSDKDetails(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), Body: strings.NewReader("0123456789"),
		Metadata: map[string]string{"empty": "", "color": "blue"}, ContentType: aws.String("text/plain")})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("304 carries the ETag", func(t *testing.T) {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), IfNoneMatch: put.ETag})
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != 304 {
			t.Fatalf("GET If-None-Match current: %v", err)
		}
		if got := re.Response.Header.Get("ETag"); got != aws.ToString(put.ETag) {
			t.Fatalf("304 ETag header %q, want %q", got, aws.ToString(put.ETag))
		}
	})
	t.Run("unquoted If-None-Match on GET still 304", func(t *testing.T) {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), IfNoneMatch: aws.String(strings.Trim(aws.ToString(put.ETag), `"`))})
		wantStatus(t, "GET If-None-Match unquoted", err, 304, "")
	})
	t.Run("If-Match false beats If-None-Match on GET", func(t *testing.T) {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), IfMatch: aws.String(`"0000"`), IfNoneMatch: put.ETag})
		wantStatus(t, "GET If-Match stale + If-None-Match current", err, 412, "PreconditionFailed")
	})
	t.Run("If-Modified-Since in the future is ignored", func(t *testing.T) {
		if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), IfModifiedSince: aws.Time(time.Now().Add(time.Hour))}); err != nil {
			t.Fatalf("GET If-Modified-Since future: %v", err)
		}
	})
	t.Run("range", func(t *testing.T) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), Range: aws.String("bytes=2-5")})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != "2345" || aws.ToString(out.ContentRange) != "bytes 2-5/10" {
			t.Fatalf("range: %q %q", b, aws.ToString(out.ContentRange))
		}
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("d/obj"), Range: aws.String("bytes=20-30")})
		wantStatus(t, "unsatisfiable range", err, 416, "InvalidRange")
	})
	t.Run("metadata with empty values is kept", func(t *testing.T) {
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("d/obj")})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := h.Metadata["empty"]; !ok || v != "" || h.Metadata["color"] != "blue" || aws.ToString(h.ContentType) != "text/plain" {
			t.Fatalf("metadata %v, content type %q", h.Metadata, aws.ToString(h.ContentType))
		}
	})
	t.Run("PUT into a missing bucket is 404 NoSuchBucket", func(t *testing.T) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("no-such-bucket-here"), Key: aws.String("k"), Body: strings.NewReader("x")})
		wantStatus(t, "PUT missing bucket", err, 404, "NoSuchBucket")
	})
	t.Run("HEAD of a missing key is 404", func(t *testing.T) {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("d/none")})
		wantStatus(t, "HEAD missing", err, 404, "")
	})
	t.Run("Content-MD5 mismatch is BadDigest and stores nothing", func(t *testing.T) {
		sum := md5.Sum([]byte("other"))
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("d/md5"), Body: strings.NewReader("body"),
			ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
		wantStatus(t, "Content-MD5 mismatch", err, 400, "BadDigest")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("d/md5")})
		wantStatus(t, "HEAD after a refused PUT", err, 404, "")
	})
	t.Run("copy-source If-None-Match that matches is 412", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("d/copy"), CopySource: aws.String(bucket + "/d/obj"),
			CopySourceIfNoneMatch: put.ETag})
		wantStatus(t, "copy-source If-None-Match matching", err, 412, "PreconditionFailed")
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("d/copy"), CopySource: aws.String(bucket + "/d/obj"),
			IfNoneMatch: aws.String("*")}); err != nil {
			t.Fatalf("copy with destination If-None-Match: %v", err)
		}
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("d/copy"), CopySource: aws.String(bucket + "/d/obj"),
			IfNoneMatch: aws.String("*")})
		wantStatus(t, "second copy with destination If-None-Match", err, 412, "PreconditionFailed")
	})
	t.Run("DeleteObjects reports a per-key ETag mismatch", func(t *testing.T) {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("d/b1"), Body: strings.NewReader("1")}); err != nil {
			t.Fatal(err)
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
			{Key: aws.String("d/b1"), ETag: aws.String(`"00000000000000000000000000000000"`)},
			{Key: aws.String("d/obj"), ETag: put.ETag},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Errors) != 1 || aws.ToString(out.Errors[0].Key) != "d/b1" || aws.ToString(out.Errors[0].Code) != "PreconditionFailed" ||
			len(out.Deleted) != 1 || aws.ToString(out.Deleted[0].Key) != "d/obj" {
			t.Fatalf("deleted %v, errors %v", out.Deleted, out.Errors)
		}
	})
	t.Run("DeleteBucket of a non-empty bucket is 409", func(t *testing.T) {
		_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
		wantStatus(t, "DeleteBucket non-empty", err, 409, "BucketNotEmpty")
	})
	t.Run("bad bucket name", func(t *testing.T) {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("Bad_Name")})
		wantStatus(t, "CreateBucket Bad_Name", err, 400, "InvalidBucketName")
	})
	t.Run("ListObjectsV2 encoding-type=url", func(t *testing.T) {
		key := "enc/a b&c+d"
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: bytes.NewReader(nil)}); err != nil {
			t.Fatal(err)
		}
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("enc/"), EncodingType: types.EncodingTypeUrl})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 1 {
			t.Fatalf("%d keys", len(out.Contents))
		}
		got := aws.ToString(out.Contents[0].Key)
		if got == key || !strings.Contains(got, "%26") {
			t.Fatalf("key not URL-encoded: %q", got)
		}
	})
}
