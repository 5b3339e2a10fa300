package s3interop

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKServerSideEncryptionRefused: the server does not encrypt at rest,
// so a PutObject asking for SSE-S3 is refused with 501 NotImplemented, not
// stored as if encrypted, and no response claims encryption.
func TestSDKServerSideEncryptionRefused(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("v"),
		ServerSideEncryption: types.ServerSideEncryptionAes256})
	wantStatus(t, "PutObject with SSE-S3", err, 501, "NotImplemented")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")})
	wantStatus(t, "HEAD after the refused PUT", err, 404, "")
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("v")})
	if err != nil || put.ServerSideEncryption != "" {
		t.Fatalf("plain PutObject: %v, ServerSideEncryption %q", err, put.ServerSideEncryption)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")})
	if err != nil || head.ServerSideEncryption != "" {
		t.Fatalf("HEAD: %v, ServerSideEncryption %q", err, head.ServerSideEncryption)
	}
}
