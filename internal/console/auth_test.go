package console_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// secretBucket fills bucket "secret" with one object and a lease record
// whose names must never leak.
func secretBucket(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	mc := f.s3()
	if err := mc.MakeBucket(ctx, "secret", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string]string{
		"payroll-2026.csv": "alice,100",
		"jobs/leaky":       `{"holder":"leaky-holder","nonce":"0123456789abcdef0123456789abcdef","token":3,"ttl_ns":60000000000}`,
	} {
		if _, err := mc.PutObject(ctx, "secret", key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// The console never shows what the caller could not read through the API
// itself: S3 data needs the S3 credentials, whatever else the caller has.
func TestConsoleS3NeedsS3Credentials(t *testing.T) {
	for _, tok := range []string{"", "acl-token-1"} {
		f := start(t, tok)
		secretBucket(t, f)
		for _, p := range []string{"/-/api/s3", "/-/api/s3?bucket=secret", "/-/api/locks?bucket=secret&prefix=jobs/", "/-/api/overview"} {
			for _, hdr := range [][]string{nil, {"X-Consul-Token", tok}, {"X-Consul-Token", "wrong"}} {
				if hdr != nil && hdr[1] == "" {
					continue
				}
				code, _, b := f.get(p, hdr...)
				if code != http.StatusUnauthorized && code != http.StatusForbidden && (p != "/-/api/overview" || hdr == nil || hdr[1] != tok) {
					t.Errorf("token %q: GET %s with %v: %d, want 401 or 403", tok, p, hdr, code)
				}
				for _, leak := range []string{"payroll", "leaky", "secret\""} {
					if bytes.Contains(b, []byte(leak)) {
						t.Errorf("token %q: GET %s with %v leaks %q: %s", tok, p, hdr, leak, b)
					}
				}
			}
		}
		for _, p := range []string{"/ui/s3?bucket=secret", "/ui/locks?bucket=secret"} {
			code, _, b := f.get(p)
			if code == http.StatusOK || bytes.Contains(b, []byte("payroll")) || bytes.Contains(b, []byte("leaky")) {
				t.Errorf("token %q: GET %s without login: %d %s", tok, p, code, b)
			}
		}
	}
}
