package s3api

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signedReq builds one request signed by testAK: header auth (presign
// false, the payload hash signed) or a presigned URL (UNSIGNED-PAYLOAD).
// The signed name, value pairs are set before signing and covered by the
// signature; the unsigned ones are added afterwards, as an attacker holding
// a presigned URL or a captured request would.
func (s *testServer) signedReq(presign bool, method, path string, body []byte, signed, unsigned []string) *http.Request {
	s.t.Helper()
	req := s.newRequest(method, path, body, signed)
	creds := aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK}
	if presign {
		q := req.URL.Query()
		q.Set("X-Amz-Expires", "300")
		req.URL.RawQuery = q.Encode()
		u, hdr, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
		if err != nil {
			s.t.Fatal(err)
		}
		if req, err = http.NewRequest(method, u, bytes.NewReader(body)); err != nil {
			s.t.Fatal(err)
		}
		for k, vs := range hdr {
			if !strings.EqualFold(k, "host") {
				req.Header[k] = vs
			}
		}
	} else {
		s.signHeader(req, creds, body)
	}
	for i := 0; i+1 < len(unsigned); i += 2 {
		req.Header.Set(unsigned[i], unsigned[i+1])
	}
	return req
}

// notSigned is the <HeadersNotSigned> element of an error body.
func notSigned(r resp) string {
	var e struct{ Code, Message, HeadersNotSigned string }
	_ = xml.Unmarshal(r.Body, &e)
	return e.HeadersNotSigned
}

const msgNotSigned = "There were headers present in the request which were not signed"

func (s *testServer) mustRefuseUnsigned(t *testing.T, r resp, want string) {
	t.Helper()
	// AWS's body has no <Resource> here (recorded).
	if r.Status != 403 || r.err().Code != "AccessDenied" || r.err().Message != msgNotSigned || notSigned(r) != want || bytes.Contains(r.Body, []byte("<Resource>")) {
		t.Fatalf("got %d %.400s; want 403 AccessDenied %q, HeadersNotSigned %q", r.Status, r.Body, msgNotSigned, want)
	}
}

// TestPresignedPutUnsignedCopySource is issue 10 item 1: a presigned PUT
// URL for one upload key plus an added, unsigned x-amz-copy-source header
// must not copy a private object into the uploader's key.
func TestPresignedPutUnsignedCopySource(t *testing.T) {
	s := signedServer(t, true)
	s.send(testAK, testSK, "PUT", "/bkt", nil).mustStatus(t, 200)
	s.send(testAK, testSK, "PUT", "/bkt/private", []byte("secret")).mustStatus(t, 200)
	before := s.stateOf()
	req := s.signedReq(true, "PUT", "/bkt/uploads/user1.txt", nil, nil, []string{"x-amz-copy-source", "/bkt/private"})
	s.mustRefuseUnsigned(t, s.roundTrip(req), "x-amz-copy-source")
	if after := s.stateOf(); after != before {
		t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
	}
	// The URL itself still works for what it was signed for.
	req = s.signedReq(true, "PUT", "/bkt/uploads/user1.txt", []byte("mine"), nil, nil)
	s.roundTrip(req).mustStatus(t, 200)
}

// TestPresignedUploadPartUnsignedCopySource: the same on a presigned
// UploadPart URL (UploadPartCopy).
func TestPresignedUploadPartUnsignedCopySource(t *testing.T) {
	s := signedServer(t, true)
	s.send(testAK, testSK, "PUT", "/bkt", nil).mustStatus(t, 200)
	s.send(testAK, testSK, "PUT", "/bkt/private", []byte("secret")).mustStatus(t, 200)
	m := s.createMPU("/bkt/uploads/big")
	before := s.stateOf()
	req := s.signedReq(true, "PUT", "/bkt/uploads/big?partNumber=1&uploadId="+m.id, nil, nil, []string{"x-amz-copy-source", "/bkt/private"})
	s.mustRefuseUnsigned(t, s.roundTrip(req), "x-amz-copy-source")
	if after := s.stateOf(); after != before {
		t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestReplayedSignedPutUnsignedCopySource: a captured header-signed PUT,
// replayed within the skew window with an added x-amz-copy-source (the
// copy path never reads the body, so the signed payload hash would never
// be checked).
func TestReplayedSignedPutUnsignedCopySource(t *testing.T) {
	s := signedServer(t, true)
	s.send(testAK, testSK, "PUT", "/bkt", nil).mustStatus(t, 200)
	s.send(testAK, testSK, "PUT", "/bkt/private", []byte("secret")).mustStatus(t, 200)
	captured := s.signedReq(false, "PUT", "/bkt/uploads/user1.txt", []byte("mine"), []string{"Content-Type", "text/plain"}, nil)
	replay := captured.Clone(context.Background())
	replay.Body = io.NopCloser(strings.NewReader("mine"))
	replay.Header.Set("x-amz-copy-source", "/bkt/private")
	s.roundTrip(captured).mustStatus(t, 200)
	before := s.stateOf()
	s.mustRefuseUnsigned(t, s.roundTrip(replay), "x-amz-copy-source")
	if after := s.stateOf(); after != before {
		t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
	}
	if g := s.do("GET", "/bkt/uploads/user1.txt", nil); string(g.Body) != "mine" {
		t.Fatalf("the upload key holds %q", g.Body)
	}
}

// TestUnsignedAmzHeadersRefused: every x-amz-* header the S3 API acts on
// (and any other), present but not signed, is refused with 403
// AccessDenied in S3's XML and changes nothing, for header and query auth
// alike.
func TestUnsignedAmzHeadersRefused(t *testing.T) {
	for _, presign := range []bool{false, true} {
		name := "header"
		if presign {
			name = "query"
		}
		t.Run(name, func(t *testing.T) { testUnsignedAmzHeaders(t, presign) })
	}
}

func testUnsignedAmzHeaders(t *testing.T, presign bool) {
	s := signedServer(t, true)
	s.mustDo(200, "PUT", "/tbk", nil)
	etSrc := s.put("/tbk/src", "source")
	s.put("/tbk/dst", "dest")
	m := s.createMPU("/tbk/mp")
	part := func(n string) string { return "/tbk/mp?partNumber=" + n + "&uploadId=" + m.id }
	m.part(1, "p1")
	complete := string(m.completeXML(1))
	del := "<Delete><Object><Key>dst</Key></Object></Delete>"
	crcOf := func(b string) string { return checksumOf("crc32", b) }
	rows := []struct {
		name, method, path, body string
		signed, unsigned         []string
	}{
		{"PutObject becomes CopyObject", "PUT", "/tbk/new", "", nil, []string{"x-amz-copy-source", "/tbk/src"}},
		{"UploadPart becomes UploadPartCopy", "PUT", part("2"), "", nil, []string{"x-amz-copy-source", "/tbk/src"}},
		{"copy source range", "PUT", part("3"), "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-copy-source-range", "bytes=0-1"}},
		{"copy source version", "PUT", "/tbk/new", "", nil, []string{"x-amz-copy-source", "/tbk/src?versionId=null"}},
		{"metadata directive", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-metadata-directive", "REPLACE"}},
		{"copy source if-match", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-copy-source-if-match", etSrc}},
		{"copy source if-none-match", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-copy-source-if-none-match", `"0000"`}},
		{"copy source if-modified-since", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-copy-source-if-modified-since", "Mon, 01 Jan 2001 00:00:00 GMT"}},
		{"copy source if-unmodified-since", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-copy-source-if-unmodified-since", "Mon, 01 Jan 2101 00:00:00 GMT"}},
		{"user metadata on PutObject", "PUT", "/tbk/new", "body", nil, []string{"x-amz-meta-owner", "mallory"}},
		{"user metadata on CreateMultipartUpload", "POST", "/tbk/new?uploads", "", nil, []string{"x-amz-meta-owner", "mallory"}},
		{"user metadata on CopyObject REPLACE", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src", "x-amz-metadata-directive", "REPLACE"}, []string{"x-amz-meta-owner", "mallory"}},
		{"checksum on PutObject", "PUT", "/tbk/new", "body", nil, []string{"x-amz-checksum-crc32", crcOf("body")}},
		{"checksum on UploadPart", "PUT", part("2"), "body", nil, []string{"x-amz-checksum-crc32", crcOf("body")}},
		{"checksum algorithm", "POST", "/tbk/new?uploads", "", nil, []string{"x-amz-checksum-algorithm", "CRC32"}},
		{"checksum on DeleteObjects", "POST", "/tbk?delete", del, nil, []string{"x-amz-checksum-crc32", crcOf(del)}},
		{"sdk checksum algorithm", "PUT", "/tbk/new", "body", nil, []string{"x-amz-sdk-checksum-algorithm", "CRC32"}},
		{"checksum on Complete", "POST", "/tbk/mp?uploadId=" + m.id, complete, nil, []string{"x-amz-checksum-crc32", crcOf("p1")}},
		{"if-match-size on DeleteObject", "DELETE", "/tbk/dst", "", nil, []string{"x-amz-if-match-size", "4"}},
		{"if-match-last-modified-time on DeleteObject", "DELETE", "/tbk/dst", "", nil, []string{"x-amz-if-match-last-modified-time", "Mon, 01 Jan 2001 00:00:00 GMT"}},
		{"tagging", "PUT", "/tbk/new", "body", nil, []string{"x-amz-tagging", "k=v"}},
		{"tagging directive", "PUT", "/tbk/new", "", []string{"x-amz-copy-source", "/tbk/src"}, []string{"x-amz-tagging-directive", "REPLACE"}},
		{"server-side encryption", "PUT", "/tbk/new", "body", nil, []string{"x-amz-server-side-encryption", "AES256"}},
		{"server-side encryption customer key", "PUT", "/tbk/new", "body", nil, []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}},
		{"storage class", "PUT", "/tbk/new", "body", nil, []string{"x-amz-storage-class", "STANDARD"}},
		{"acl", "PUT", "/tbk/new", "body", nil, []string{"x-amz-acl", "public-read"}},
		{"website redirect", "PUT", "/tbk/new", "body", nil, []string{"x-amz-website-redirect-location", "/elsewhere"}},
		{"object lock", "PUT", "/tbk/new", "body", nil, []string{"x-amz-object-lock-mode", "GOVERNANCE"}},
		{"version id", "GET", "/tbk/src", "", nil, []string{"x-amz-version-id", "null"}},
		{"bypass governance", "DELETE", "/tbk/dst", "", nil, []string{"x-amz-bypass-governance-retention", "true"}},
		{"expected bucket owner", "DELETE", "/tbk/dst", "", nil, []string{"x-amz-expected-bucket-owner", "123456789012"}},
		{"mfa", "DELETE", "/tbk/dst", "", nil, []string{"x-amz-mfa", "1 2"}},
		{"decoded content length", "PUT", "/tbk/new", "body", nil, []string{"x-amz-decoded-content-length", "4"}},
		{"trailer", "PUT", "/tbk/new", "body", nil, []string{"x-amz-trailer", "x-amz-checksum-crc32"}},
		{"security token", "PUT", "/tbk/new", "body", nil, []string{"x-amz-security-token", "tok"}},
		{"an unknown x-amz header", "PUT", "/tbk/new", "body", nil, []string{"x-amz-whatever", "1"}},
		{"two unsigned headers", "PUT", "/tbk/new", "body", nil, []string{"x-amz-meta-b", "2", "x-amz-meta-a", "1"}},
	}
	if presign {
		// Header auth signs x-amz-date itself; on a presigned URL the
		// header is one more unsigned x-amz-* header.
		rows = append(rows, struct {
			name, method, path, body string
			signed, unsigned         []string
		}{"date", "PUT", "/tbk/new", "body", nil, []string{"x-amz-date", time.Now().UTC().Format("20060102T150405Z")}})
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			var body []byte
			if row.body != "" {
				body = []byte(row.body)
			}
			before := s.stateOf()
			var names []string
			for i := 0; i < len(row.unsigned); i += 2 {
				names = append(names, row.unsigned[i])
			}
			sort.Strings(names)
			want := strings.Join(names, ", ")
			s.mustRefuseUnsigned(t, s.roundTrip(s.signedReq(presign, row.method, row.path, body, row.signed, row.unsigned)), want)
			if after := s.stateOf(); after != before {
				t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestSignedHeaderValueBound: the handler acts on the value the signature
// covers. A signed "x-amz-copy-source: /tbk/a,b" resent as two headers
// "/tbk/a" and "b" has the same canonical line (values joined with ","),
// so the signature still holds; the copy must still be of "a,b", not "a".
func TestSignedHeaderValueBound(t *testing.T) {
	s := signedServer(t, true)
	s.mustDo(200, "PUT", "/tbk", nil)
	s.put("/tbk/a", "object a")
	s.put("/tbk/a,b", "object a,b")
	req := s.signedReq(false, "PUT", "/tbk/dst", nil, []string{"x-amz-copy-source", "/tbk/a,b"}, nil)
	req.Header["X-Amz-Copy-Source"] = []string{"/tbk/a", "b"}
	s.roundTrip(req).mustStatus(t, 200)
	if g := s.do("GET", "/tbk/dst", nil); string(g.Body) != "object a,b" {
		t.Fatalf("the copy acted on an unsigned reading of the header: dst holds %q", g.Body)
	}
	// Runs of spaces collapse in the canonical form: the handler reads the
	// collapsed value, which is the one signed.
	s.put("/tbk/c%20d", "object c d")
	s.put("/tbk/c%20%20d", "object c  d")
	req = s.signedReq(false, "PUT", "/tbk/dst2", nil, []string{"x-amz-copy-source", "/tbk/c d"}, nil)
	req.Header.Set("X-Amz-Copy-Source", "/tbk/c  d")
	s.roundTrip(req).mustStatus(t, 200)
	if g := s.do("GET", "/tbk/dst2", nil); string(g.Body) != "object c d" {
		t.Fatalf("dst2 holds %q", g.Body)
	}
}

// TestPresignedConditionNotReplaced: a presigned URL's signed If-Match
// (or If-None-Match) query condition cannot be replaced by an unsigned
// header of the same name: the signed condition is the one evaluated.
func TestPresignedConditionNotReplaced(t *testing.T) {
	s := signedServer(t, true)
	s.mustDo(200, "PUT", "/tbk", nil)
	cur := s.put("/tbk/k", "current")
	stale := md5ETag("stale")
	u := s.presign("PUT", "/tbk/k?If-Match="+url.QueryEscape(stale))
	req, _ := http.NewRequest("PUT", u, strings.NewReader("overwrite"))
	req.Header.Set("If-Match", cur)
	if r := s.roundTrip(req); r.Status != 412 || r.err().Condition != "If-Match" {
		t.Fatalf("unsigned If-Match header over a signed stale If-Match: %d %s", r.Status, r.Body)
	}
	create := s.presign("PUT", "/tbk/new?If-None-Match=%2A")
	s.putURL(create, "first").mustStatus(t, 200)
	req, _ = http.NewRequest("PUT", create, strings.NewReader("second"))
	req.Header.Set("If-None-Match", "")
	if r := s.roundTrip(req); r.Status != 412 {
		t.Fatalf("empty If-None-Match header over a signed If-None-Match=*: %d %s", r.Status, r.Body)
	}
	if g := s.do("GET", "/tbk/k", nil); string(g.Body) != "current" {
		t.Fatalf("k holds %q", g.Body)
	}
	if g := s.do("GET", "/tbk/new", nil); string(g.Body) != "first" {
		t.Fatalf("new holds %q", g.Body)
	}
}

// TestUnsignedNonAmzHeaders is the rest of the request surface (issue 10
// item 2, made AWS's rule by issue 24 item 1; the rule is in the package
// doc). Content-Type, Content-Encoding, Cache-Control, Content-Disposition,
// Content-Language and Expires may go unsigned in both forms, as on AWS:
// minio-go v7.0.x (restic, mc) streams with an unsigned Content-Type and
// the JavaScript SDK v2 never signs it; the type sent is stored. When
// signed they must match (SignatureDoesNotMatch). Content-MD5, when
// present, must be signed in both forms (AWS answers HeadersNotSigned:
// content-md5). The If-* conditions and Range may be unsigned.
func TestUnsignedNonAmzHeaders(t *testing.T) {
	s := signedServer(t, true)
	s.mustDo(200, "PUT", "/tbk", nil)
	s.put("/tbk/k", "0123456789")
	for _, h := range []string{"Content-Type", "Content-Encoding", "Cache-Control", "Content-Disposition", "Content-Language", "Expires"} {
		for _, presign := range []bool{false, true} {
			key := fmt.Sprintf("/tbk/%s-%v", h, presign)
			s.roundTrip(s.signedReq(presign, "PUT", key, []byte("unsigned"), nil, []string{h, "text/html"})).mustStatus(t, 200)
			if got := s.do("HEAD", key, nil).Header.Get(h); got != "text/html" {
				t.Fatalf("%s sent unsigned (presigned %v) is stored as %q", h, presign, got)
			}
			req := s.signedReq(presign, "PUT", key, []byte("changed"), []string{h, "text/plain"}, nil)
			req.Header.Set(h, "text/html")
			if r := s.roundTrip(req); r.Status != 403 || r.err().Code != "SignatureDoesNotMatch" {
				t.Fatalf("%s signed and then changed (presigned %v): %d %s", h, presign, r.Status, r.Body)
			}
		}
	}
	// The same on CreateMultipartUpload and CopyObject REPLACE.
	s.roundTrip(s.signedReq(false, "POST", "/tbk/mp?uploads", nil, nil, []string{"Content-Type", "text/html"})).mustStatus(t, 200)
	s.roundTrip(s.signedReq(false, "PUT", "/tbk/c", nil,
		[]string{"x-amz-copy-source", "/tbk/k", "x-amz-metadata-directive", "REPLACE"}, []string{"Content-Type", "text/html"})).mustStatus(t, 200)
	if ct := s.do("HEAD", "/tbk/c", nil).Header.Get("Content-Type"); ct != "text/html" {
		t.Fatalf("copy REPLACE with an unsigned Content-Type: %q", ct)
	}

	// Content-MD5 must be signed in both forms; signed, a wrong one is BadDigest.
	for _, presign := range []bool{false, true} {
		before := s.stateOf()
		s.mustRefuseUnsigned(t, s.roundTrip(s.signedReq(presign, "PUT", "/tbk/k", []byte("x"), nil, []string{"Content-MD5", "LZRzGd/0sCqm6bFsqdHw+w=="})), "content-md5")
		if after := s.stateOf(); after != before {
			t.Fatalf("unsigned Content-MD5 (presigned %v): state changed", presign)
		}
		if r := s.roundTrip(s.signedReq(presign, "PUT", "/tbk/k", []byte("x"), []string{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}, nil)); r.Status != 400 || r.err().Code != "BadDigest" {
			t.Fatalf("signed wrong Content-MD5 (presigned %v): %d %s", presign, r.Status, r.Body)
		}
	}
	// Unsigned inputs that can only refuse or narrow.
	if r := s.roundTrip(s.signedReq(true, "PUT", "/tbk/k", []byte("x"), nil, []string{"If-None-Match", "*"})); r.Status != 412 {
		t.Fatalf("unsigned If-None-Match on a presigned PUT: %d %s", r.Status, r.Body)
	}
	if r := s.roundTrip(s.signedReq(true, "GET", "/tbk/k", nil, nil, []string{"Range", "bytes=2-4"})); r.Status != 206 || string(r.Body) != "234" {
		t.Fatalf("unsigned Range on a presigned GET: %d %q", r.Status, r.Body)
	}
	if r := s.roundTrip(s.signedReq(false, "GET", "/tbk/k", nil, nil, []string{"If-Unmodified-Since", "Mon, 01 Jan 2001 00:00:00 GMT"})); r.Status != 412 {
		t.Fatalf("unsigned If-Unmodified-Since: %d %q", r.Status, r.Body)
	}
}
