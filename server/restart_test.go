package server_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
)

func s3Client(srv *servertest.Server) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
	})
}

// The orphan-blob sweep at Open must keep every blob a committed record
// names. Through the real server and the official SDK: an object too large
// to be stored inline and a part of an upload in progress survive a
// restart on the same directory, byte for byte, and the upload completes.
func TestBlobsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	srv := servertest.Start(t, &servertest.Options{Durable: true})
	dir := srv.DataDir
	c := s3Client(srv)
	body := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB: a blob, not inline
	part := bytes.Repeat([]byte("p"), 5<<20)                // S3's minimum part size
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"),
		Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("mp"),
		UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	srv = servertest.Start(t, &servertest.Options{Durable: true, Config: server.Config{DataDir: dir}})
	c = s3Client(srv)
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
	if err != nil {
		t.Fatalf("object after restart: %v", err)
	}
	b, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("object after restart: %d bytes (%v), want %d", len(b), err, len(body))
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"),
		Key: aws.String("mp"), UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{
			Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}}}); err != nil {
		t.Fatalf("completing an upload whose part was written before the restart: %v", err)
	}
	got, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(b, part) {
		t.Fatalf("completed upload: %d bytes, want %d (%q…)", len(b), len(part), strings.TrimSpace(string(b[:min(len(b), 40)])))
	}
}
