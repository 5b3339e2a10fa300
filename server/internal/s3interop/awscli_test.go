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

	"github.com/latchkey/latchkey/internal/testutil"
)

// awsCLI returns the aws command and its version line, or fails
// (CI=true) or skips the test.
func awsCLI(t *testing.T) (string, string) {
	t.Helper()
	p, err := exec.LookPath("aws")
	var v []byte
	if err == nil {
		v, err = exec.Command(p, "--version").CombinedOutput()
	}
	if err != nil {
		testutil.Unavailable(t, "the aws CLI is not available: %v", err)
	}
	return p, string(v)
}

// TestAWSCLICopyLargeObject: `aws s3 cp s3://… s3://…` of an object over
// the CLI's 8 MiB multipart threshold (it calls GetObjectTagging on the
// source, then copies by parts) copies the bytes and the tags.
func TestAWSCLICopyLargeObject(t *testing.T) {
	cli, version := awsCLI(t)
	srv, c, bucket := start(t)
	ctx := context.Background()
	data := make([]byte, 9<<20)
	_, _ = rand.Read(data)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("big"), Body: bytes.NewReader(data),
		Tagging: aws.String("kept=yes")}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, cli, append([]string{"--endpoint-url", srv.URL}, args...)...)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey,
			"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE="+filepath.Join(dir, "none"),
			"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "none"), "AWS_PAGER=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aws %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("s3", "cp", "s3://"+bucket+"/big", "s3://"+bucket+"/copy")
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("copy")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("copy: %v, %d bytes, equal %v", err, len(b), bytes.Equal(b, data))
	}
	if out := run("s3api", "get-object-tagging", "--bucket", bucket, "--key", "big"); !strings.Contains(out, `"kept"`) {
		t.Fatalf("get-object-tagging: %s", out)
	}
	// AWS CLI v2 copies the source's tags (GetObjectTagging, then the
	// tags on the destination); v1 copies no tags.
	if strings.HasPrefix(version, "aws-cli/2") {
		tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: aws.String("copy")})
		if err != nil || len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Key) != "kept" {
			t.Fatalf("copied tags: %+v %v", tags, err)
		}
	}
}
