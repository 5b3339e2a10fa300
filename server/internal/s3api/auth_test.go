package s3api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

const testAK, testSK = "AKIDAUTHTEST", "auth-test-secret"

// signedServer is the handler behind the real SigV4 verifier over plain
// HTTP; anonymous also serves unsigned requests.
func signedServer(t *testing.T, anonymous bool) *testServer {
	t.Helper()
	e := enginetest.Open(t)
	h := MustNew(e, &Options{Auth: sigv4.New(sigv4.Credentials{testAK: testSK}.Lookup, nil), Anonymous: anonymous, MinPartSize: 5})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{t: t, e: e, h: h, srv: srv}
}

// send signs (header auth) and sends one request with the given key pair.
func (s *testServer) send(ak, sk, method, path string, body []byte, hdr ...string) resp {
	s.t.Helper()
	req := s.newRequest(method, path, body, hdr)
	s.signHeader(req, aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, body)
	return s.roundTrip(req)
}

// newRequest builds a request to path with body and the name, value
// pairs of hdr set.
func (s *testServer) newRequest(method, path string, body []byte, hdr []string) *http.Request {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// signHeader signs req with creds (header auth, body's payload hash
// signed).
func (s *testServer) signHeader(req *http.Request, creds aws.Credentials, body []byte) {
	s.t.Helper()
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "s3", "us-east-1", time.Now()); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testServer) roundTrip(req *http.Request) resp {
	s.t.Helper()
	res, err := s.srv.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

// presign returns a presigned URL for method on path; the query of path
// (for example If-None-Match=*) is part of what is signed.
func (s *testServer) presign(method, path string) string {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	q := req.URL.Query()
	q.Set("X-Amz-Expires", "300")
	req.URL.RawQuery = q.Encode()
	u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK},
		req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	return u
}

func (s *testServer) putURL(u, body string) resp {
	s.t.Helper()
	req, err := http.NewRequest("PUT", u, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	return s.roundTrip(req)
}

// TestAuthErrors: the verifier's verdicts reach the client as S3 errors
// over real HTTP: unknown key, wrong secret, unsigned, HEAD without a body.
func TestAuthErrors(t *testing.T) {
	s := signedServer(t, false)
	s.send(testAK, testSK, "PUT", "/authb", nil).mustStatus(t, 200)
	s.send(testAK, testSK, "PUT", "/authb/k", []byte("v")).mustStatus(t, 200)
	for _, tc := range []struct {
		name   string
		r      resp
		status int
		code   string
	}{
		{"unknown access key", s.send("AKIDUNKNOWN", testSK, "GET", "/authb/k", nil), 403, "InvalidAccessKeyId"},
		{"wrong secret", s.send(testAK, "wrong", "GET", "/authb/k", nil), 403, "SignatureDoesNotMatch"},
		{"unsigned", s.do("GET", "/authb/k", nil), 403, "AccessDenied"},
		{"unsigned write", s.do("PUT", "/authb/k", []byte("x")), 403, "AccessDenied"},
	} {
		if tc.r.Status != tc.status || tc.r.err().Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, tc.r.Status, tc.r.Body, tc.status, tc.code)
		}
	}
	// HEAD: the status alone, no body.
	if r := s.send("AKIDUNKNOWN", testSK, "HEAD", "/authb/k", nil); r.Status != 403 || len(r.Body) != 0 {
		t.Fatalf("HEAD with unknown key: %d %q", r.Status, r.Body)
	}
	if g := s.send(testAK, testSK, "GET", "/authb/k", nil); g.Status != 200 || string(g.Body) != "v" {
		t.Fatalf("the refused requests changed the object: %d %q", g.Status, g.Body)
	}
	// --anonymous serves unsigned requests but still verifies signed ones.
	a := signedServer(t, true)
	a.mustDo(200, "PUT", "/anon", nil)
	a.mustDo(200, "PUT", "/anon/k", []byte("v"))
	if r := a.send("AKIDUNKNOWN", testSK, "GET", "/anon/k", nil); r.Status != 403 || r.err().Code != "InvalidAccessKeyId" {
		t.Fatalf("anonymous mode, bad key: %d %s", r.Status, r.Body)
	}
}

// TestPresignedConditionalQuerySigned: If-None-Match / If-Match travelling
// as signed query parameters of a presigned URL are honoured, as by S3,
// and cannot be stripped without breaking the signature.
func TestPresignedConditionalQuerySigned(t *testing.T) {
	s := signedServer(t, false)
	s.send(testAK, testSK, "PUT", "/pre", nil).mustStatus(t, 200)
	create := s.presign("PUT", "/pre/k?If-None-Match=%2A")
	if r := s.putURL(create, "first"); r.Status != 200 {
		t.Fatalf("first presigned create: %d %s", r.Status, r.Body)
	}
	if r := s.putURL(create, "second"); r.Status != 412 || r.err().Condition != "If-None-Match" {
		t.Fatalf("second presigned create: %d %s", r.Status, r.Body)
	}
	// Dropping the condition from the URL voids the signature.
	u, _ := url.Parse(create)
	q := u.Query()
	q.Del("If-None-Match")
	u.RawQuery = q.Encode()
	if r := s.putURL(u.String(), "sneaky"); r.Status != 403 || r.err().Code != "SignatureDoesNotMatch" {
		t.Fatalf("stripped condition: %d %s", r.Status, r.Body)
	}
	etag := s.send(testAK, testSK, "HEAD", "/pre/k", nil).Header.Get("ETag")
	if etag != md5ETag("first") {
		t.Fatalf("the object is not the first create's: %s", etag)
	}
	stale := s.presign("PUT", "/pre/k?If-Match="+url.QueryEscape(md5ETag("nope")))
	if r := s.putURL(stale, "x"); r.Status != 412 || r.err().Condition != "If-Match" {
		t.Fatalf("presigned stale If-Match: %d %s", r.Status, r.Body)
	}
	missing := s.presign("PUT", "/pre/none?If-Match="+url.QueryEscape(etag))
	if r := s.putURL(missing, "x"); r.Status != 404 || r.err().Code != "NoSuchKey" {
		t.Fatalf("presigned If-Match on a missing key: %d %s", r.Status, r.Body)
	}
	cas := s.presign("PUT", "/pre/k?If-Match="+url.QueryEscape(etag))
	if r := s.putURL(cas, "third"); r.Status != 200 || r.Header.Get("ETag") != md5ETag("third") {
		t.Fatalf("presigned If-Match current: %d %s", r.Status, r.Body)
	}
	// The query form and the header form together: both conditions, 501.
	both := s.presign("PUT", "/pre/k?If-Match="+url.QueryEscape(md5ETag("third")))
	req, _ := http.NewRequest("PUT", both, strings.NewReader("x"))
	req.Header.Set("If-None-Match", "*")
	if r := s.roundTrip(req); r.Status != 501 || r.err().Header != "If-Match,If-None-Match" {
		t.Fatalf("query If-Match plus unsigned If-None-Match header: %d %s", r.Status, r.Body)
	}
}

func (r resp) mustStatus(t *testing.T, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
}
