package s3interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
)

// TestSDKServerSideEncryption: through the server, a PutObject asking for
// SSE-S3 is stored encrypted under the master key generated into the data
// directory (mode 0600) and answered, like HEAD, with AES256; a plain
// PutObject is stored as sent and no response claims encryption. Before
// SSE-S3 was implemented the first PUT was refused 501.
func TestSDKServerSideEncryption(t *testing.T) {
	srv, c, bucket := start(t)
	ctx := context.Background()
	aes := types.ServerSideEncryptionAes256
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("enc"), Body: strings.NewReader("secret v"),
		ServerSideEncryption: aes})
	if err != nil || put.ServerSideEncryption != aes {
		t.Fatalf("PutObject with SSE-S3: %v, ServerSideEncryption %q", err, put.ServerSideEncryption)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("enc")})
	if err != nil || head.ServerSideEncryption != aes {
		t.Fatalf("HEAD: %v, ServerSideEncryption %q", err, head.ServerSideEncryption)
	}
	st, err := os.Stat(filepath.Join(srv.DataDir, ssecrypt.MasterKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("generated master key: %v %v", st, err)
	}
	put, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("v")})
	if err != nil || put.ServerSideEncryption != "" {
		t.Fatalf("plain PutObject: %v, ServerSideEncryption %q", err, put.ServerSideEncryption)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")})
	if err != nil || head.ServerSideEncryption != "" {
		t.Fatalf("HEAD: %v, ServerSideEncryption %q", err, head.ServerSideEncryption)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("kms"), Body: strings.NewReader("v"),
		ServerSideEncryption: types.ServerSideEncryptionAwsKms})
	wantStatus(t, "PutObject with aws:kms", err, 400, "KMS.NotFoundException")
}

// TestAWSCLICopySSE: `aws s3 cp --sse AES256 --recursive` uploads a small
// file (PutObject) and one over the CLI's 8 MiB multipart threshold
// (CreateMultipartUpload with the header, parts without it): both are
// stored encrypted, answered AES256, and `aws s3 cp` reads them back
// whole. Two CLI runs only: each costs seconds of Python start-up.
func TestAWSCLICopySSE(t *testing.T) {
	cli, _ := awsCLI(t)
	srv, c, bucket := start(t)
	ctx := context.Background()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, cli, append([]string{"--endpoint-url", srv.URL}, args...)...)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey,
			"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE="+filepath.Join(dir, "none"),
			"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "none"), "AWS_PAGER=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("aws %v: %v\n%s", args, err, out)
		}
	}
	up, back := filepath.Join(dir, "up"), filepath.Join(dir, "back")
	if err := os.Mkdir(up, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"small": make([]byte, 1000), "big": make([]byte, 9<<20)}
	for name, data := range files {
		_, _ = rand.Read(data)
		if err := os.WriteFile(filepath.Join(up, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run("s3", "cp", "--recursive", "--sse", "AES256", up, "s3://"+bucket+"/")
	for name, data := range files {
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil || !bytes.Equal(b, data) || got.ServerSideEncryption != types.ServerSideEncryptionAes256 {
			t.Fatalf("%s: %v, %d bytes, equal %v, sse %q", name, err, len(b), bytes.Equal(b, data), got.ServerSideEncryption)
		}
	}
	run("s3", "cp", "--recursive", "s3://"+bucket+"/", back)
	for name, data := range files {
		if b, err := os.ReadFile(filepath.Join(back, name)); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("aws s3 cp back %s: %v", name, err)
		}
	}
}
