package sigv4

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

var sdkCreds = aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret}

func s3Signer() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
}

// signedRequest builds a request signed by the real aws-sdk-go-v2 signer.
func signedRequest(t *testing.T, method, url string, body []byte, payloadHash string, at time.Time, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if err := s3Signer().SignHTTP(context.Background(), sdkCreds, req, payloadHash, "s3", testRegion, at); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestHeaderAuth(t *testing.T) {
	srv := testServer(t, nil, nil)
	body := payload(10000)
	now := time.Now()
	cases := []struct {
		name, path, hash string
		hdr              map[string]string
	}{
		{"sha256 payload", "/bucket/key", sha256hex(body), nil},
		{"unsigned payload", "/bucket/key", UnsignedPayload, nil},
		{"escaped key", "/bucket/a%20b%2Bc/%C3%A9t%C3%A9/~x_y.z", sha256hex(body), nil},
		{"dot segments and double slash", "/bucket/a//b/../c/./d", sha256hex(body), nil},
		{"query string", "/bucket/key?uploadId=a%2Fb&partNumber=3", sha256hex(body), nil},
		{"empty query value", "/bucket?uploads", sha256hex(body), nil},
		{"extra signed headers", "/bucket/key", sha256hex(body), map[string]string{
			"Content-Type": "text/plain", "X-Amz-Meta-Note": "  two   spaces ", "If-None-Match": "*"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := signedRequest(t, http.MethodPut, srv.URL+c.path, body, c.hash, now, c.hdr)
			got := do(t, req)
			want(t, got, 200, "")
			if got.AccessKey != testAK || got.BodySHA != sha256hex(body) {
				t.Fatalf("access key %q, body sha %s, want %s", got.AccessKey, got.BodySHA, sha256hex(body))
			}
		})
	}
}

func TestHeaderAuthFailures(t *testing.T) {
	body := payload(5000)
	now := time.Now()
	t.Run("body tampered: sha256 mismatch at EOF", func(t *testing.T) {
		srv := testServer(t, nil, flipBody(4999))
		want(t, do(t, signedRequest(t, "PUT", srv.URL+"/b/k", body, sha256hex(body), now, nil)), 400, "XAmzContentSHA256Mismatch")
	})
	t.Run("signed header tampered", func(t *testing.T) {
		srv := testServer(t, nil, func(r *http.Request) { r.Header.Set("X-Amz-Meta-A", "2") })
		want(t, do(t, signedRequest(t, "PUT", srv.URL+"/b/k", body, sha256hex(body), now, map[string]string{"X-Amz-Meta-A": "1"})), 403, "SignatureDoesNotMatch")
	})
	t.Run("path tampered", func(t *testing.T) {
		srv := testServer(t, nil, func(r *http.Request) { r.URL.Path = "/b/other" })
		want(t, do(t, signedRequest(t, "PUT", srv.URL+"/b/k", body, UnsignedPayload, now, nil)), 403, "SignatureDoesNotMatch")
	})
	t.Run("query tampered", func(t *testing.T) {
		srv := testServer(t, nil, func(r *http.Request) { r.URL.RawQuery = "versionId=2" })
		want(t, do(t, signedRequest(t, "GET", srv.URL+"/b/k?versionId=1", nil, UnsignedPayload, now, nil)), 403, "SignatureDoesNotMatch")
	})
	t.Run("payload hash header swapped to unsigned", func(t *testing.T) {
		srv := testServer(t, nil, func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", UnsignedPayload) })
		want(t, do(t, signedRequest(t, "PUT", srv.URL+"/b/k", body, sha256hex(body), now, nil)), 403, "SignatureDoesNotMatch")
	})
	for _, c := range []struct {
		name string
		bad  aws.Credentials
		code string
	}{
		{"wrong secret", aws.Credentials{AccessKeyID: testAK, SecretAccessKey: "not-the-secret"}, "SignatureDoesNotMatch"},
		{"unknown access key", aws.Credentials{AccessKeyID: "AKIDUNKNOWN", SecretAccessKey: testSecret}, "InvalidAccessKeyId"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := testServer(t, nil, nil)
			req, _ := http.NewRequest("GET", srv.URL+"/b/k", nil)
			req.Header.Set("X-Amz-Content-Sha256", UnsignedPayload)
			if err := s3Signer().SignHTTP(context.Background(), c.bad, req, UnsignedPayload, "s3", testRegion, now); err != nil {
				t.Fatal(err)
			}
			want(t, do(t, req), 403, c.code)
		})
	}
	t.Run("no authentication", func(t *testing.T) {
		srv := testServer(t, nil, nil)
		req, _ := http.NewRequest("GET", srv.URL+"/b/k", nil)
		want(t, do(t, req), 403, "AccessDenied")
	})
	t.Run("clock skew over 15 minutes", func(t *testing.T) {
		srv := testServer(t, nil, nil)
		want(t, do(t, signedRequest(t, "GET", srv.URL+"/b/k", nil, UnsignedPayload, now.Add(-16*time.Minute), nil)), 403, "RequestTimeTooSkewed")
		want(t, do(t, signedRequest(t, "GET", srv.URL+"/b/k", nil, UnsignedPayload, now.Add(16*time.Minute), nil)), 403, "RequestTimeTooSkewed")
		want(t, do(t, signedRequest(t, "GET", srv.URL+"/b/k", nil, UnsignedPayload, now.Add(-14*time.Minute), nil)), 200, "")
	})
	t.Run("missing x-amz-content-sha256", func(t *testing.T) {
		srv := testServer(t, nil, nil)
		req, _ := http.NewRequest("GET", srv.URL+"/b/k", nil)
		if err := s3Signer().SignHTTP(context.Background(), sdkCreds, req, emptySHA256, "s3", testRegion, now); err != nil {
			t.Fatal(err)
		}
		want(t, do(t, req), 400, "InvalidRequest")
	})
	t.Run("sigv2 is refused", func(t *testing.T) {
		srv := testServer(t, nil, nil)
		req, _ := http.NewRequest("GET", srv.URL+"/b/k", nil)
		req.Header.Set("Authorization", "AWS "+testAK+":c2lnbmF0dXJl")
		want(t, do(t, req), 400, "InvalidRequest")
	})
	t.Run("malformed header", func(t *testing.T) {
		srv := testServer(t, nil, nil)
		req, _ := http.NewRequest("GET", srv.URL+"/b/k", nil)
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
		want(t, do(t, req), 400, "AuthorizationHeaderMalformed")
	})
	t.Run("region pinned", func(t *testing.T) {
		srv := testServer(t, &Options{Region: "eu-west-1"}, nil)
		want(t, do(t, signedRequest(t, "GET", srv.URL+"/b/k", nil, UnsignedPayload, now, nil)), 400, "AuthorizationHeaderMalformed")
	})
}

func TestErrorIs(t *testing.T) {
	err := error(newErr(ErrSignatureDoesNotMatch, "chunk %d", 3))
	if !errors.Is(err, ErrSignatureDoesNotMatch) || errors.Is(err, ErrAccessDenied) {
		t.Fatalf("errors.Is does not match by code: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "sigv4: SignatureDoesNotMatch") {
		t.Fatalf("message %q", err)
	}
}

func presign(t *testing.T, method, url string, hdr map[string]string, at time.Time, expires time.Duration) (string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	q := req.URL.Query()
	q.Set("X-Amz-Expires", strconv.Itoa(int(expires/time.Second)))
	req.URL.RawQuery = q.Encode()
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	u, h, err := s3Signer().PresignHTTP(context.Background(), sdkCreds, req, UnsignedPayload, "s3", testRegion, at)
	if err != nil {
		t.Fatal(err)
	}
	return u, h
}

func TestPresigned(t *testing.T) {
	srv := testServer(t, nil, nil)
	now := time.Now()
	t.Run("GET", func(t *testing.T) {
		u, _ := presign(t, "GET", srv.URL+"/bucket/some%20key", nil, now, time.Hour)
		req, _ := http.NewRequest("GET", u, nil)
		got := do(t, req)
		want(t, got, 200, "")
		if got.AccessKey != testAK {
			t.Fatalf("access key %q", got.AccessKey)
		}
	})
	t.Run("PUT with body", func(t *testing.T) {
		u, _ := presign(t, "PUT", srv.URL+"/bucket/k", nil, now, time.Hour)
		req, _ := http.NewRequest("PUT", u, bytes.NewReader([]byte("hello")))
		got := do(t, req)
		want(t, got, 200, "")
		if got.BodySHA != sha256hex([]byte("hello")) {
			t.Fatalf("body sha %s", got.BodySHA)
		}
	})
	t.Run("PUT with signed If-None-Match header", func(t *testing.T) {
		u, h := presign(t, "PUT", srv.URL+"/bucket/k", map[string]string{"If-None-Match": "*"}, now, time.Hour)
		if !strings.Contains(u, "if-none-match") {
			t.Fatalf("If-None-Match is not a signed header: %s", u)
		}
		req, _ := http.NewRequest("PUT", u, bytes.NewReader([]byte("x")))
		for k, v := range h {
			req.Header[k] = v
		}
		got := do(t, req)
		want(t, got, 200, "")
		if got.IfNone != "*" {
			t.Fatalf("If-None-Match %q", got.IfNone)
		}
		req, _ = http.NewRequest("PUT", u, bytes.NewReader([]byte("x")))
		want(t, do(t, req), 403, "SignatureDoesNotMatch") // header dropped
	})
	t.Run("PUT with If-None-Match as signed query parameter", func(t *testing.T) {
		u, _ := presign(t, "PUT", srv.URL+"/bucket/k?If-None-Match=%2A", nil, now, time.Hour)
		req, _ := http.NewRequest("PUT", u, bytes.NewReader([]byte("x")))
		got := do(t, req)
		want(t, got, 200, "")
		if got.IfNone != "*" {
			t.Fatalf("signed query If-None-Match not promoted to a header: %q", got.IfNone)
		}
		tampered := strings.Replace(u, "If-None-Match=%2A&", "", 1)
		if tampered == u {
			t.Fatalf("could not remove the parameter from %s", u)
		}
		req, _ = http.NewRequest("PUT", tampered, bytes.NewReader([]byte("x")))
		want(t, do(t, req), 403, "SignatureDoesNotMatch")
	})
	t.Run("expired", func(t *testing.T) {
		u, _ := presign(t, "GET", srv.URL+"/bucket/k", nil, now.Add(-2*time.Hour), time.Hour)
		req, _ := http.NewRequest("GET", u, nil)
		want(t, do(t, req), 403, "AccessDenied")
	})
	t.Run("tampered signature", func(t *testing.T) {
		u, _ := presign(t, "GET", srv.URL+"/bucket/k", nil, now, time.Hour)
		i := strings.Index(u, "X-Amz-Signature=") + len("X-Amz-Signature=")
		c := byte('0')
		if u[i] == '0' {
			c = '1'
		}
		req, _ := http.NewRequest("GET", u[:i]+string(c)+u[i+1:], nil)
		want(t, do(t, req), 403, "SignatureDoesNotMatch")
	})
	t.Run("method changed", func(t *testing.T) {
		u, _ := presign(t, "GET", srv.URL+"/bucket/k", nil, now, time.Hour)
		req, _ := http.NewRequest("DELETE", u, nil)
		want(t, do(t, req), 403, "SignatureDoesNotMatch")
	})
	t.Run("expiry over a week", func(t *testing.T) {
		u, _ := presign(t, "GET", srv.URL+"/bucket/k", nil, now, 8*24*time.Hour)
		req, _ := http.NewRequest("GET", u, nil)
		want(t, do(t, req), 400, "AuthorizationQueryParametersError")
	})
}
