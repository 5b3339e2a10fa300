package console_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// secretBucket fills bucket "secret" with one object and a lease record
// whose names must never leak.
func secretBucket(t *testing.T, f *fixture) {
	t.Helper()
	f.bucket("secret", false)
	for key, body := range map[string]string{
		"payroll-2026.csv": "alice,100",
		"jobs/leaky":       `{"holder":"leaky-holder","nonce":"0123456789abcdef0123456789abcdef","token":3,"ttl_ns":60000000000}`,
		"leaky-site/pointer": `{"generation":"20260101T000000.000Z-0123456789abcdef","manifest":"leaky-site/gen/20260101T000000.000Z-0123456789abcdef/manifest",` +
			`"committed":"2026-01-01T00:00:00Z"}`,
	} {
		f.putObject("secret", key, body, "")
	}
}

// The console never shows what the caller could not read through the API
// itself: S3 data needs the S3 credentials, whatever else the caller has.
func TestConsoleS3NeedsS3Credentials(t *testing.T) {
	for _, tok := range []string{"", "acl-token-1"} {
		f := start(t, tok)
		secretBucket(t, f)
		for _, p := range []string{"/-/api/s3", "/-/api/s3?bucket=secret", "/-/api/locks?bucket=secret&prefix=jobs/", "/-/api/overview",
			"/-/api/publications?bucket=secret", "/-/api/publication?bucket=secret&prefix=leaky-site"} {
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
		for _, p := range []string{"/ui/s3?bucket=secret", "/ui/locks?bucket=secret", "/ui/publications?bucket=secret"} {
			code, _, b := f.get(p)
			if code == http.StatusOK || bytes.Contains(b, []byte("payroll")) || bytes.Contains(b, []byte("leaky")) {
				t.Errorf("token %q: GET %s without login: %d %s", tok, p, code, b)
			}
		}
	}
}

// Every object GET and HEAD carries the sandbox and nosniff headers,
// whatever type the object was stored with or the request overrides.
func TestObjectResponsesAreSandboxed(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	mc := f.s3()
	f.bucket("sandboxed", false)
	f.putObject("sandboxed", "x.html", "<script>alert(1)</script>", "text/html")
	for _, method := range []string{"GET", "HEAD"} {
		for _, q := range []url.Values{nil, {"response-content-type": {"text/html"}}} {
			u, err := mc.Presign(ctx, method, "sandboxed", "x.html", time.Hour, q)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(method, u.String(), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != "sandbox" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s %v: %d, CSP %q, X-Content-Type-Options %q", method, q, resp.StatusCode,
					resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Content-Type-Options"))
			}
		}
	}
}

// A JSON client proves the S3 keys with a SigV4 signature (as curl
// --aws-sigv4 sends it); a signature by another secret proves nothing.
func TestConsoleJSONSignedWithSigV4(t *testing.T) {
	f := start(t, "acl-token-2")
	secretBucket(t, f)
	get := func(secret string) (int, string) {
		req, _ := http.NewRequest("GET", f.srv.URL+"/-/api/s3?bucket=secret", nil)
		req.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
		req = signer.SignV4(*req, f.srv.AccessKey, secret, "", "us-east-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := get(f.srv.SecretKey); code != http.StatusOK || !strings.Contains(b, "payroll-2026.csv") {
		t.Fatalf("signed with the S3 keys: %d %s", code, b)
	}
	if code, b := get("not-the-secret"); code != http.StatusUnauthorized || strings.Contains(b, "payroll") {
		t.Fatalf("signed with another secret: %d %s", code, b)
	}
	// The S3 signature proves nothing about Consul data, which needs the token.
	req, _ := http.NewRequest("GET", f.srv.URL+"/-/api/kv", nil)
	req.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	req = signer.SignV4(*req, f.srv.AccessKey, f.srv.SecretKey, "", "us-east-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("S3 signature on a Consul view: %d", resp.StatusCode)
	}
}

// A page and its API endpoint run the same view behind the same check: a
// session without the Consul token is refused a Consul view on both, and
// an unknown name is 404 on both, each in its own format.
func TestPageAndAPIAnswerAlike(t *testing.T) {
	f := start(t, "tok")
	s3only := f.login(url.Values{"access_key": {f.srv.AccessKey}, "secret_key": {f.srv.SecretKey}})
	for _, c := range []struct {
		path    string
		cookie  string
		code    int
		message string
	}{
		{"/ui/kv", s3only, http.StatusForbidden, ""},
		{"/-/api/kv", s3only, http.StatusForbidden, `"error"`},
		{"/ui/nosuch", f.session, http.StatusNotFound, "no such page: nosuch"},
		{"/-/api/nosuch", f.session, http.StatusNotFound, `"error": "no such endpoint: /-/api/nosuch"`},
	} {
		code, _, b := f.get(c.path, "Cookie", c.cookie)
		if code != c.code || !strings.Contains(string(b), c.message) {
			t.Errorf("GET %s: %d %.200s, want %d with %q", c.path, code, b, c.code, c.message)
		}
	}
}
