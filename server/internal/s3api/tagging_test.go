package s3api

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func tagXML(pairs ...string) string {
	var b strings.Builder
	b.WriteString("<Tagging><TagSet>")
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "<Tag><Key>%s</Key><Value>%s</Value></Tag>", pairs[i], pairs[i+1])
	}
	b.WriteString("</TagSet></Tagging>")
	return b.String()
}

// TestObjectTagging: PUT/GET/DELETE ?tagging, x-amz-tagging on PutObject,
// CreateMultipartUpload and CopyObject (with the tagging directive), and
// x-amz-tagging-count on GET/HEAD.
func TestObjectTagging(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("tgb")
	s.put("/tgb/plain", "v")
	s.mustGetContaining("/tgb/plain?tagging", "<TagSet></TagSet>")
	if h := s.mustDo(200, "HEAD", "/tgb/plain", nil).Header.Get("x-amz-tagging-count"); h != "" {
		t.Fatalf("untagged HEAD tagging count %q", h)
	}
	etag := s.put("/tgb/plain", "v")
	s.mustDo(200, "PUT", "/tgb/plain?tagging", []byte(tagXML("b", "2", "a", "one two")))
	r := s.mustDo(200, "GET", "/tgb/plain?tagging", nil)
	if want := "<TagSet><Tag><Key>a</Key><Value>one two</Value></Tag><Tag><Key>b</Key><Value>2</Value></Tag></TagSet>"; !strings.Contains(string(r.Body), want) {
		t.Fatalf("tags: %s, want %s", r.Body, want)
	}
	h := s.mustDo(200, "HEAD", "/tgb/plain", nil).Header
	if h.Get("x-amz-tagging-count") != "2" || h.Get("ETag") != etag {
		t.Fatalf("HEAD after tagging: count %q etag %q (want 2, %s)", h.Get("x-amz-tagging-count"), h.Get("ETag"), etag)
	}
	if c := s.mustDo(200, "GET", "/tgb/plain", nil).Header.Get("x-amz-tagging-count"); c != "2" {
		t.Fatalf("GET tagging count %q", c)
	}
	s.mustDo(204, "DELETE", "/tgb/plain?tagging", nil)
	s.mustGetContaining("/tgb/plain?tagging", "<TagSet></TagSet>")

	// x-amz-tagging on PutObject.
	s.put("/tgb/hdr", "v", "x-amz-tagging", "k1=v1&k%202=v%2B2&empty=")
	r = s.mustDo(200, "GET", "/tgb/hdr?tagging", nil)
	for _, want := range []string{"<Key>k 2</Key><Value>v+2</Value>", "<Key>k1</Key><Value>v1</Value>", "<Key>empty</Key><Value></Value>"} {
		if !strings.Contains(string(r.Body), want) {
			t.Fatalf("header tags: %s lacks %s", r.Body, want)
		}
	}
	// CopyObject: COPY (default) keeps the source's tags, REPLACE takes the header's.
	s.mustDo(200, "PUT", "/tgb/copied", nil, "x-amz-copy-source", "/tgb/hdr")
	if c := s.mustDo(200, "HEAD", "/tgb/copied", nil).Header.Get("x-amz-tagging-count"); c != "3" {
		t.Fatalf("copied tag count %q", c)
	}
	s.mustDo(200, "PUT", "/tgb/replaced", nil, "x-amz-copy-source", "/tgb/hdr", "x-amz-tagging-directive", "REPLACE", "x-amz-tagging", "only=one")
	s.mustGetContaining("/tgb/replaced?tagging", "<TagSet><Tag><Key>only</Key><Value>one</Value></Tag></TagSet>")
	// Multipart: the tags of CreateMultipartUpload land on the object.
	m := s.createMPU("/tgb/mp", "x-amz-tagging", "mp=yes")
	m.part(1, "abc")
	if r := m.complete(nil, 1); r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	s.mustGetContaining("/tgb/mp?tagging", "<Key>mp</Key><Value>yes</Value>")
	// Missing object.
	s.mustRefuse(404, "NoSuchKey", "GET", "/tgb/none?tagging", nil)
}

// TestObjectTaggingVersions: ?tagging with versionId addresses one version,
// and the response names it.
func TestObjectTaggingVersions(t *testing.T) {
	s := newTestServer(t, nil)
	s.versionedBucket("tvb")
	v1 := s.mustDo(200, "PUT", "/tvb/k", []byte("1"), "x-amz-tagging", "gen=1").Header.Get("x-amz-version-id")
	s.mustDo(200, "PUT", "/tvb/k", []byte("2"), "x-amz-tagging", "gen=2")
	r := s.mustDo(200, "PUT", "/tvb/k?tagging&versionId="+v1, []byte(tagXML("gen", "one")))
	if r.Header.Get("x-amz-version-id") != v1 {
		t.Fatalf("put tagging version header %q, want %s", r.Header.Get("x-amz-version-id"), v1)
	}
	s.mustGetContaining("/tvb/k?tagging&versionId="+v1, "<Value>one</Value>")
	s.mustGetContaining("/tvb/k?tagging", "<Value>2</Value>")
	s.mustRefuse(404, "NoSuchVersion", "GET", "/tvb/k?tagging&versionId=00000000000000aa", nil)
}

// TestObjectTaggingBadInput: AWS's limits and errors, and nothing changes.
func TestObjectTaggingBadInput(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("tbb")
	s.put("/tbb/k", "v", "x-amz-tagging", "keep=me")
	var eleven []string
	for i := range 11 {
		eleven = append(eleven, fmt.Sprintf("k%d", i), "v")
	}
	elevenHdr := url.Values{}
	for i := range 11 {
		elevenHdr.Set(fmt.Sprintf("k%d", i), "v")
	}
	long := func(n int) string { return strings.Repeat("é", n) }
	cases := []refusal{
		{"11 tags", "PUT", "/tbb/k?tagging", tagXML(eleven...), nil, 400, "BadRequest"},
		{"key of 129 characters", "PUT", "/tbb/k?tagging", tagXML(long(129), "v"), nil, 400, "InvalidTag"},
		{"value of 257 characters", "PUT", "/tbb/k?tagging", tagXML("k", long(257)), nil, 400, "InvalidTag"},
		{"empty key", "PUT", "/tbb/k?tagging", tagXML("", "v"), nil, 400, "InvalidTag"},
		{"duplicate keys", "PUT", "/tbb/k?tagging", tagXML("a", "1", "a", "2"), nil, 400, "InvalidTag"},
		{"aws: prefix", "PUT", "/tbb/k?tagging", tagXML("aws:x", "1"), nil, 400, "InvalidTag"},
		{"disallowed character", "PUT", "/tbb/k?tagging", tagXML("a*b", "1"), nil, 400, "InvalidTag"},
		{"malformed XML", "PUT", "/tbb/k?tagging", "<Tagging><TagSet>", nil, 400, "MalformedXML"},
		{"missing object", "PUT", "/tbb/none?tagging", tagXML("a", "1"), nil, 404, "NoSuchKey"},
		{"delete tags of a missing object", "DELETE", "/tbb/none?tagging", "", nil, 404, "NoSuchKey"},
		{"header: 11 tags", "PUT", "/tbb/new", "x", []string{"x-amz-tagging", elevenHdr.Encode()}, 400, "BadRequest"},
		{"header: duplicate keys", "PUT", "/tbb/new", "x", []string{"x-amz-tagging", "a=1&a=2"}, 400, "InvalidArgument"},
		{"header: bad escaping", "PUT", "/tbb/new", "x", []string{"x-amz-tagging", "a=%zz"}, 400, "InvalidArgument"},
		{"header: long value", "PUT", "/tbb/new", "x", []string{"x-amz-tagging", "a=" + strings.Repeat("v", 257)}, 400, "InvalidTag"},
		{"header on CreateMultipartUpload", "POST", "/tbb/new?uploads", "", []string{"x-amz-tagging", "aws:a=1"}, 400, "InvalidTag"},
		{"copy: unknown tagging directive", "PUT", "/tbb/new", "", []string{"x-amz-copy-source", "/tbb/k", "x-amz-tagging-directive", "MOVE"}, 400, "InvalidArgument"},
		{"copy: REPLACE with bad tags", "PUT", "/tbb/new", "", []string{"x-amz-copy-source", "/tbb/k", "x-amz-tagging-directive", "REPLACE", "x-amz-tagging", "a=1&a=2"}, 400, "InvalidArgument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.stateOf() + string(s.mustDo(200, "GET", "/tbb/k?tagging", nil).Body)
			tc.check(t, s)
			after := s.stateOf() + string(s.mustDo(200, "GET", "/tbb/k?tagging", nil).Body)
			if after != before {
				t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// Exactly at the limits is fine.
	var ten []string
	for i := range 10 {
		ten = append(ten, fmt.Sprintf("k%d", i), long(256))
	}
	ten[0] = long(128)
	s.mustDo(200, "PUT", "/tbb/k?tagging", []byte(tagXML(ten...)))
}
