package s3api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequestLimits(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("lim")
	serve := func(req *http.Request) resp {
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		return resp{rec.Code, rec.Header(), rec.Body.Bytes()}
	}
	// A declared size above 5 GiB is refused before any byte is read.
	req := httptest.NewRequest("PUT", "/lim/huge", strings.NewReader("x"))
	req.ContentLength = MaxObjectSize + 1
	if r := serve(req); r.Status != 400 || r.err().Code != "EntityTooLarge" {
		t.Fatalf("too large: %d %s", r.Status, r.Body)
	}
	// So is a part above 5 GiB.
	s.mustDo(200, "POST", "/lim/mp?uploads", nil)
	req = httptest.NewRequest("PUT", "/lim/mp?partNumber=1&uploadId=x", strings.NewReader("x"))
	req.ContentLength = MaxObjectSize + 1
	if r := serve(req); r.Status != 400 || r.err().Code != "EntityTooLarge" {
		t.Fatalf("part too large: %d %s", r.Status, r.Body)
	}
	// The header section is bounded at 8 KiB, as S3's.
	pad := func(total int) string {
		// "X-Pad: " + value + CRLF, beside what httptest.NewRequest adds.
		return strings.Repeat("p", total-len("X-Pad")-4)
	}
	req = httptest.NewRequest("PUT", "/lim/hdr", strings.NewReader("x"))
	req.Header.Set("X-Pad", pad(MaxHeaderBytes+1))
	if r := serve(req); r.Status != 400 || r.err().Code != "RequestHeaderSectionTooLarge" || !strings.Contains(string(r.Body), "<MaxSizeAllowed>8192</MaxSizeAllowed>") {
		t.Fatalf("header too large: %d %s", r.Status, r.Body)
	}
	req = httptest.NewRequest("PUT", "/lim/hdr", strings.NewReader("x"))
	req.Header.Set("X-Pad", pad(MaxHeaderBytes))
	if r := serve(req); r.Status != 200 {
		t.Fatalf("header section of exactly 8 KiB: %d %s", r.Status, r.Body)
	}
	// No length at all.
	req = httptest.NewRequest("PUT", "/lim/nolen", strings.NewReader("x"))
	req.ContentLength = -1
	if r := serve(req); r.Status != 411 || r.err().Code != "MissingContentLength" {
		t.Fatalf("no length: %d %s", r.Status, r.Body)
	}
	// A body shorter than declared.
	req = httptest.NewRequest("PUT", "/lim/short", strings.NewReader("abc"))
	req.ContentLength = inlineMax + 100
	if r := serve(req); r.Status != 400 || r.err().Code != "IncompleteBody" {
		t.Fatalf("short body: %d %s", r.Status, r.Body)
	}
	if n := countBlobs(t, s); n != 0 {
		t.Fatalf("failed uploads left %d blobs", n)
	}
	// x-amz-decoded-content-length on a plain (not aws-chunked) body does
	// not truncate what is stored.
	s.put("/lim/plain", "0123456789", "x-amz-decoded-content-length", "5")
	if g := s.mustDo(200, "GET", "/lim/plain", nil); string(g.Body) != "0123456789" {
		t.Fatalf("decoded length header on a plain body: stored %q", g.Body)
	}
	// An unsigned aws-chunked body is de-chunked (sigv4.Dechunk): the
	// object is the decoded bytes, not the framing.
	s.mustDo(200, "PUT", "/lim/chunked", []byte("3\r\nabc\r\n0\r\n\r\n"), "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "x-amz-decoded-content-length", "3")
	if g := s.mustDo(200, "GET", "/lim/chunked", nil); string(g.Body) != "abc" {
		t.Fatalf("unsigned aws-chunked: stored %q", g.Body)
	}
	// DeleteObjects with more than 1000 keys.
	var b strings.Builder
	b.WriteString("<Delete>")
	for i := range 1001 {
		fmt.Fprintf(&b, "<Object><Key>k%d</Key></Object>", i)
	}
	b.WriteString("</Delete>")
	s.mustRefuse(400, "MalformedXML", "POST", "/lim?delete", []byte(b.String()))
	// Metadata exactly at the 2 KiB limit is fine.
	s.put("/lim/meta", "x", "x-amz-meta-"+strings.Repeat("n", 24), strings.Repeat("v", MaxUserMetadata-24))
	// Unsupported sub-resources say so.
	if r := s.do("GET", "/lim?acl", nil); r.Status != 501 {
		t.Fatalf("acl: %d", r.Status)
	}
}

// TestPresignedConditionalQuery: If-None-Match may travel as a (signed)
// query parameter of a presigned URL; a second PUT of the same URL is 412.
func TestPresignedConditionalQuery(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("pre")
	s.mustDo(200, "PUT", "/pre/k?If-None-Match=*", []byte("one"))
	if r := s.do("PUT", "/pre/k?If-None-Match=*", []byte("two")); r.Status != 412 || r.err().Condition != "If-None-Match" {
		t.Fatalf("second presigned create: %d %s", r.Status, r.Body)
	}
}

// TestMetadataWireNames: user metadata goes out under lower-case header
// names, as AWS sends them (botocore keeps the name's case verbatim).
func TestMetadataWireNames(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("wire")
	s.put("/wire/k", "x", "X-Amz-Meta-Color", "blue", "x-amz-meta-empty", "")
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, httptest.NewRequest("GET", "/wire/k", nil))
	if v, ok := rec.Header()["x-amz-meta-color"]; !ok || v[0] != "blue" {
		t.Fatalf("headers %v", rec.Header())
	}
	if v, ok := rec.Header()["x-amz-meta-empty"]; !ok || v[0] != "" {
		t.Fatalf("empty value not kept: %v", rec.Header())
	}
}
