package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
	"github.com/latchkey/latchkey/server/servertest"
)

// TestSSEMasterKeyAcrossRestarts: an SSE-S3 object written under the
// master key generated into the data directory reads back after a
// restart; started with another key (--sse-master-key-file), the server
// refuses to start with an error naming the key, instead of serving
// errors or garbage; with the original key given by file, it reads.
func TestSSEMasterKeyAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	srv := servertest.Start(t, &servertest.Options{Durable: true})
	dir := srv.DataDir
	c := s3Client(srv)
	body := bytes.Repeat([]byte("sse restart "), 20<<10)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"),
		Body: bytes.NewReader(body), ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	generated := filepath.Join(dir, ssecrypt.MasterKeyFile)
	orig, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(t.TempDir(), "other.key")
	if err := os.WriteFile(other, []byte(hex.EncodeToString(bytes.Repeat([]byte{9}, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = server.New(server.Config{DataDir: dir, SSEMasterKeyFile: other, NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "master key") {
		t.Fatalf("started with another master key: %v", err)
	}

	given := filepath.Join(t.TempDir(), "orig.key")
	if err := os.WriteFile(given, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(generated); err != nil {
		t.Fatal(err)
	}
	srv = servertest.Start(t, &servertest.Options{Durable: true, Config: server.Config{DataDir: dir, SSEMasterKeyFile: given}})
	got, err := s3Client(srv).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
	if err != nil {
		t.Fatalf("object after restart: %v", err)
	}
	b, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil || !bytes.Equal(b, body) || got.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("object after restart: %d bytes (%v), sse %q", len(b), err, got.ServerSideEncryption)
	}
	if _, err := os.Stat(generated); err == nil {
		t.Fatal("a key was generated although --sse-master-key-file was given")
	}
}
