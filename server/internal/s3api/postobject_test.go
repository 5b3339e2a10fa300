package s3api

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// postField is one form field, in order.
type postField struct{ name, value string }

// signedPostFields returns the SigV4 fields of a form whose policy has the
// given conditions (JSON fragments) and expiration, signed with testSK
// for region.
func signedPostFields(t *testing.T, expiration time.Time, region string, conds ...string) []postField {
	t.Helper()
	now := time.Now().UTC()
	date := now.Format("20060102T150405Z")
	cred := testAK + "/" + now.Format("20060102") + "/" + region + "/s3/aws4_request"
	conds = append(conds, `{"x-amz-algorithm": "AWS4-HMAC-SHA256"}`, fmt.Sprintf(`{"x-amz-credential": %q}`, cred), fmt.Sprintf(`{"x-amz-date": %q}`, date))
	doc := fmt.Sprintf(`{"expiration": %q, "conditions": [%s]}`, expiration.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(conds, ", "))
	policy := base64.StdEncoding.EncodeToString([]byte(doc))
	key := []byte("AWS4" + testSK)
	for _, part := range []string{now.Format("20060102"), region, "s3", "aws4_request", policy} {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(part))
		key = m.Sum(nil)
	}
	return []postField{{"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred}, {"x-amz-date", date},
		{"policy", policy}, {"x-amz-signature", hex.EncodeToString(key)}}
}

// postForm encodes fields then the file part (filename fn).
func postFormBody(t *testing.T, fields []postField, fn string, file []byte) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := w.WriteField(f.name, f.value); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile("file", fn)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(file)
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func (s *testServer) postForm(bucket string, body []byte, ct string) resp {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.srv.URL+"/"+bucket, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	return s.roundTrip(req)
}

// TestPostObjectAdversarial: a form's refusals change nothing, blobs
// included: a file part cut short (no closing boundary), more form data
// before the file than MaxPostFormData, a policy without a bucket
// condition, an unknown access key, a credential for another service,
// an unsigned form on a
// server that does not serve anonymous requests. A large file streams to
// a blob and reads back whole; POST /bucket?delete is still
// DeleteObjects.
func TestPostObjectAdversarial(t *testing.T) {
	s := signedServer(t, true) // stateOf reads unsigned; forms are signed
	s.send(testAK, testSK, "PUT", "/pbk", nil).mustStatus(t, 200)
	exp := time.Now().Add(time.Hour)
	good := append(signedPostFields(t, exp, "us-east-1", `{"bucket": "pbk"}`, `["starts-with", "$key", ""]`), postField{"key", "k"})
	before := s.stateOf()
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB: a blob, not inline

	body, ct := postFormBody(t, good, "f", big)
	cut := body[:len(body)-len("\r\n--")-70] // inside the file, before the closing boundary
	if r := s.postForm("pbk", cut, ct); r.Status != 400 || r.err().Code != "IncompleteBody" {
		t.Fatalf("truncated form: %d %s", r.Status, r.Body)
	}
	huge := append([]postField{{"x-ignore-pad", strings.Repeat("p", MaxPostFormData)}}, good...)
	body, ct = postFormBody(t, huge, "f", []byte("x"))
	if r := s.postForm("pbk", body, ct); r.Status != 400 || r.err().Code != "MaxPostPreDataLengthExceededError" {
		t.Fatalf("oversized fields: %d %s", r.Status, r.Body)
	}
	body, ct = postFormBody(t, append(signedPostFields(t, exp, "us-east-1", `["starts-with", "$key", ""]`), postField{"key", "k"}), "f", []byte("x"))
	if r := s.postForm("pbk", body, ct); r.Status != 403 || !strings.Contains(r.err().Message, `["eq", "$bucket", "pbk"]`) {
		t.Fatalf("policy without a bucket condition: %d %s", r.Status, r.Body)
	}
	other := append(signedPostFields(t, exp, "us-east-1", `{"bucket": "pbk"}`, `{"key": "k"}`), postField{"key", "k"})
	other[1].value = "AKIDOTHER" + other[1].value[len(testAK):]
	body, ct = postFormBody(t, other, "f", []byte("x"))
	if r := s.postForm("pbk", body, ct); r.Status != 403 || r.err().Code != "InvalidAccessKeyId" {
		t.Fatalf("unknown access key: %d %s", r.Status, r.Body)
	}
	other[1].value = strings.Replace(other[1].value, "/s3/", "/sqs/", 1)
	body, ct = postFormBody(t, other, "f", []byte("x"))
	if r := s.postForm("pbk", body, ct); r.Status != 400 || r.err().Code != "InvalidArgument" {
		t.Fatalf("credential for another service: %d %s", r.Status, r.Body)
	}
	closed := signedServer(t, false)
	closed.send(testAK, testSK, "PUT", "/pbk", nil).mustStatus(t, 200)
	body, ct = postFormBody(t, []postField{{"key", "k"}}, "f", []byte("x"))
	if r := closed.postForm("pbk", body, ct); r.Status != 403 || r.err().Code != "AccessDenied" {
		t.Fatalf("unsigned form: %d %s", r.Status, r.Body)
	}
	if r := closed.send(testAK, testSK, "HEAD", "/pbk/k", nil); r.Status != 404 {
		t.Fatalf("unsigned form stored: %d", r.Status)
	}
	if after := s.stateOf(); after != before {
		t.Fatalf("refused forms changed state:\n%s\n%s", before, after)
	}

	body, ct = postFormBody(t, good, "f", big)
	s.postForm("pbk", body, ct).mustStatus(t, 204)
	if g := s.send(testAK, testSK, "GET", "/pbk/k", nil); !bytes.Equal(g.Body, big) {
		t.Fatalf("read back %d bytes, want %d", len(g.Body), len(big))
	}
	del := []byte("<Delete><Object><Key>k</Key></Object></Delete>")
	sum := md5sumB64(del)
	if r := s.send(testAK, testSK, "POST", "/pbk?delete", del, "Content-MD5", sum); r.Status != 200 || !bytes.Contains(r.Body, []byte("<Deleted>")) {
		t.Fatalf("DeleteObjects: %d %s", r.Status, r.Body)
	}
}

// TestPostObjectExpiration: the policy's expiration is judged by
// Options.Now (an injected clock here): valid the second before, refused
// with AWS's message at and after it; an anonymous server stores an
// unsigned form.
func TestPostObjectExpiration(t *testing.T) {
	e := enginetest.Open(t)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	var now time.Time
	h := MustNew(e, &Options{Auth: sigv4.New(sigv4.Credentials{testAK: testSK}.Lookup, nil), Anonymous: true,
		Now: func() time.Time { return now }})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := &testServer{t: t, e: e, h: h, srv: srv}
	s.send(testAK, testSK, "PUT", "/pex", nil).mustStatus(t, 200)
	fields := append(signedPostFields(t, exp, "us-east-1", `{"bucket": "pex"}`, `{"key": "k"}`), postField{"key", "k"})
	body, ct := postFormBody(t, fields, "f", []byte("v"))
	for _, tc := range []struct {
		at   time.Time
		want int
	}{{exp, 403}, {exp.Add(time.Hour), 403}, {exp.Add(-time.Second), 204}} {
		now = tc.at
		r := s.postForm("pex", body, ct)
		if r.Status != tc.want || tc.want == 403 && r.err().Message != "Invalid according to Policy: Policy expired." {
			t.Fatalf("at expiration%+v: %d %s", tc.at.Sub(exp), r.Status, r.Body)
		}
	}
	body, ct = postFormBody(t, []postField{{"key", "anon/${filename}"}}, "a.txt", []byte("anon"))
	s.postForm("pex", body, ct).mustStatus(t, 204)
	if g := s.do("GET", "/pex/anon/a.txt", nil); string(g.Body) != "anon" {
		t.Fatalf("anonymous form upload: %d %q", g.Status, g.Body)
	}
}

func md5sumB64(b []byte) string {
	sum := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestPostObjectSSE: a form upload asking for AES256 (its
// x-amz-server-side-encryption field), or into a bucket whose default is
// AES256, is sealed at rest and answered with the header, inline and as
// a blob; a form asking for aws:kms is refused and stores nothing.
func TestPostObjectSSE(t *testing.T) {
	s := newTestServer(t, &Options{Anonymous: true, MinPartSize: 5, SSE: testMasterKey(t, 1)})
	s.bucket("pse")
	s.bucket("pdef")
	s.mustDo(200, "PUT", "/pdef?encryption", []byte(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>`+
		`<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`))
	for _, c := range []struct {
		bucket string
		fields []postField
		size   int
	}{
		{"pse", []postField{{"key", "small"}, {"x-amz-server-side-encryption", "AES256"}}, 40},
		{"pse", []postField{{"key", "big"}, {"x-amz-server-side-encryption", "AES256"}}, 200 << 10},
		{"pdef", []postField{{"key", "dflt"}}, 40},
	} {
		plain := pattern("POST-SECRET-"+c.fields[0].value, c.size)
		body, ct := postFormBody(t, c.fields, "f", plain)
		r := s.postForm(c.bucket, body, ct)
		r.mustStatus(t, 204)
		if got := r.Header.Get("X-Amz-Server-Side-Encryption"); got != "AES256" {
			t.Fatalf("%s/%s: answered encryption %q, want AES256", c.bucket, c.fields[0].value, got)
		}
		g := s.mustDo(200, "GET", "/"+c.bucket+"/"+c.fields[0].value, nil)
		if !bytes.Equal(g.Body, plain) || g.Header.Get("X-Amz-Server-Side-Encryption") != "AES256" {
			t.Fatalf("%s/%s: read back %d bytes, encryption %q", c.bucket, c.fields[0].value, len(g.Body), g.Header.Get("X-Amz-Server-Side-Encryption"))
		}
		if hits := findInTree(t, s.e.Dir(), plain[12:36]); len(hits) != 0 {
			t.Fatalf("%s/%s: plaintext on disk in %v", c.bucket, c.fields[0].value, hits)
		}
	}
	before := s.stateOf()
	body, ct := postFormBody(t, []postField{{"key", "kms"}, {"x-amz-server-side-encryption", "aws:kms"}}, "f", []byte("x"))
	if r := s.postForm("pse", body, ct); r.Status != 400 || r.err().Code != "KMS.NotFoundException" {
		t.Fatalf("aws:kms form: %d %s", r.Status, r.Body)
	}
	if after := s.stateOf(); after != before {
		t.Fatalf("a refused form changed state:\n%s\n%s", before, after)
	}
}
