package s3interop

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
)

// sdkClient is aws-sdk-go-v2 as an application builds it: LoadDefaultConfig
// (so the default checksum settings apply) with static credentials.
func sdkClient(t testing.TB, srv *servertest.Server, ak, sk string) *s3.Client {
	t.Helper()
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(ak, sk, "")))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.UsePathStyle = true
	})
}

// start runs a server and returns it with an SDK client and a fresh bucket.
func start(t *testing.T) (*servertest.Server, *s3.Client, string) {
	t.Helper()
	srv := servertest.Start(t, nil)
	c := sdkClient(t, srv, srv.AccessKey, srv.SecretKey)
	bucket := testutil.RandomName("interop-")
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return srv, c, bucket
}

// status returns the HTTP status and S3 error code of an SDK error.
func status(err error) (int, string) {
	if err == nil {
		return 200, ""
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode(), code
	}
	return 0, err.Error()
}

func wantStatus(t *testing.T, what string, err error, st int, code string) {
	t.Helper()
	gs, gc := status(err)
	if gs != st || (code != "" && gc != code) {
		t.Fatalf("%s: got %d %q (%v), want %d %q", what, gs, gc, err, st, code)
	}
}

// uploadCRC32Part creates a multipart upload of key with CRC32 checksums
// and uploads data as its part 1; it returns the upload's id and the part
// as CompleteMultipartUpload lists it.
func uploadCRC32Part(t *testing.T, c *s3.Client, bucket, key string, data []byte) (*string, types.CompletedPart) {
	t.Helper()
	ctx := context.Background()
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: cr.UploadId, PartNumber: aws.Int32(1),
		Body: bytes.NewReader(data), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	return cr.UploadId, types.CompletedPart{ETag: up.ETag, PartNumber: aws.Int32(1), ChecksumCRC32: up.ChecksumCRC32}
}

// sendForCode sends req and returns the answer's status and S3 error
// Code ("" when its body has none).
func sendForCode(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Code string }
	b, _ := io.ReadAll(resp.Body)
	_ = xml.Unmarshal(b, &e)
	return resp.StatusCode, e.Code
}
