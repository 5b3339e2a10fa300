package s3api

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCopyObject(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("src")
	s.bucket("dst")
	big := strings.Repeat("z", inlineMax*2)
	et := s.put("/src/a%20b", "payload", "Content-Type", "text/x", "x-amz-meta-m", "1")
	s.put("/src/big", big)
	// Default directive COPY keeps the source metadata.
	r := s.mustDo(200, "PUT", "/dst/c1", nil, "x-amz-copy-source", "/src/a%20b")
	var res struct{ ETag, LastModified string }
	if err := xml.Unmarshal(r.Body, &res); err != nil || res.ETag != et {
		t.Fatalf("copy result %s", r.Body)
	}
	g := s.mustDo(200, "GET", "/dst/c1", nil)
	if string(g.Body) != "payload" || g.Header.Get("Content-Type") != "text/x" || g.Header.Get("x-amz-meta-m") != "1" {
		t.Fatalf("copy: %q %v", g.Body, g.Header)
	}
	// REPLACE takes the request's metadata.
	s.mustDo(200, "PUT", "/dst/c2", nil, "x-amz-copy-source", "src/a%20b", "x-amz-metadata-directive", "REPLACE",
		"Content-Type", "text/y", "x-amz-meta-n", "2")
	g = s.mustDo(200, "GET", "/dst/c2", nil)
	if g.Header.Get("Content-Type") != "text/y" || g.Header.Get("x-amz-meta-n") != "2" || g.Header.Get("x-amz-meta-m") != "" {
		t.Fatalf("replace: %v", g.Header)
	}
	// A large (blob) source.
	s.mustDo(200, "PUT", "/dst/big", nil, "x-amz-copy-source", "/src/big")
	if g := s.mustDo(200, "GET", "/dst/big", nil); string(g.Body) != big {
		t.Fatal("big copy differs")
	}
	lm := s.mustDo(200, "HEAD", "/src/a%20b", nil).Header.Get("Last-Modified")
	lmT, _ := http.ParseTime(lm)
	cases := []struct {
		name   string
		dst    string
		hdr    []string
		status int
		code   string
		cond   string
	}{
		{"source if-match differs", "/dst/x1", []string{"x-amz-copy-source-if-match", `"nope"`}, 412, "PreconditionFailed", "x-amz-copy-source-If-Match"},
		{"source if-none-match matches", "/dst/x2", []string{"x-amz-copy-source-if-none-match", et}, 412, "PreconditionFailed", "x-amz-copy-source-If-None-Match"},
		{"source if-unmodified-since false", "/dst/x3", []string{"x-amz-copy-source-if-unmodified-since", lmT.Add(-time.Hour).Format(http.TimeFormat)}, 412, "PreconditionFailed", "x-amz-copy-source-If-Unmodified-Since"},
		{"source if-modified-since false", "/dst/x4", []string{"x-amz-copy-source-if-modified-since", lm}, 412, "PreconditionFailed", "x-amz-copy-source-If-Modified-Since"},
		{"source if-match equal", "/dst/x5", []string{"x-amz-copy-source-if-match", et}, 200, "", ""},
		{"dest INM * over existing", "/dst/c1", []string{"If-None-Match", "*"}, 412, "PreconditionFailed", "If-None-Match"},
		{"dest INM * absent", "/dst/x6", []string{"If-None-Match", "*"}, 200, "", ""},
		{"dest IM on missing", "/dst/x7", []string{"If-Match", et}, 404, "NoSuchKey", ""},
		{"dest IM equal", "/dst/c1", []string{"If-Match", et}, 200, "", ""},
		{"dest IM differs", "/dst/c1", []string{"If-Match", `"other"`}, 412, "PreconditionFailed", "If-Match"},
		{"dest IM *", "/dst/c1", []string{"If-Match", "*"}, 501, "NotImplemented", ""},
		{"missing source", "/dst/x8", []string{"x-amz-copy-source", "/src/none"}, 404, "NoSuchKey", ""},
		{"missing source bucket", "/dst/x9", []string{"x-amz-copy-source", "/nosrc/k"}, 404, "NoSuchBucket", ""},
		{"missing dest bucket", "/nodst/x", nil, 404, "NoSuchBucket", ""},
		{"bad directive", "/dst/x10", []string{"x-amz-metadata-directive", "MOVE"}, 400, "InvalidArgument", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := append([]string{"x-amz-copy-source", "/src/a%20b"}, tc.hdr...)
			r := s.do("PUT", tc.dst, nil, hdr...)
			if e := r.err(); r.Status != tc.status || e.Code != tc.code || e.Condition != tc.cond {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
		})
	}
	// In place: without REPLACE it is illegal; with If-None-Match: * the
	// precondition answers first (412).
	s.mustRefuse(400, "InvalidRequest", "PUT", "/src/a%20b", nil, "x-amz-copy-source", "/src/a%20b")
	if r := s.do("PUT", "/src/a%20b", nil, "x-amz-copy-source", "/src/a%20b", "If-None-Match", "*"); r.Status != 412 || r.err().Condition != "If-None-Match" {
		t.Fatalf("in-place copy INM: %d %s", r.Status, r.Body)
	}
}

func TestCopyVersionedSource(t *testing.T) {
	s := newTestServer(t, nil)
	s.versionedBucket("vsrc")
	v1 := s.mustDo(200, "PUT", "/vsrc/k", []byte("first")).Header.Get("x-amz-version-id")
	s.put("/vsrc/k", "second")
	r := s.mustDo(200, "PUT", "/vsrc/copy", nil, "x-amz-copy-source", "/vsrc/k?versionId="+v1)
	if r.Header.Get("x-amz-copy-source-version-id") != v1 {
		t.Fatalf("copy source version header: %v", r.Header)
	}
	if g := s.mustDo(200, "GET", "/vsrc/copy", nil); string(g.Body) != "first" {
		t.Fatalf("copied %q", g.Body)
	}
	marker := s.mustDo(204, "DELETE", "/vsrc/k", nil).Header.Get("x-amz-version-id")
	if r := s.do("PUT", "/vsrc/c2", nil, "x-amz-copy-source", "/vsrc/k"); r.Status != 404 {
		t.Fatalf("copy from a key under a marker: %d", r.Status)
	}
	s.mustRefuse(400, "InvalidRequest", "PUT", "/vsrc/c3", nil, "x-amz-copy-source", "/vsrc/k?versionId="+marker)
}

func TestUploadPartCopy(t *testing.T) {
	s := newTestServer(t, &Options{Anonymous: true, MinPartSize: 4})
	s.bucket("upc")
	s.put("/upc/src", "0123456789")
	m := s.createMPU("/upc/dst")
	r := s.mustDo(200, "PUT", "/upc/dst?partNumber=1&uploadId="+m.id, nil, "x-amz-copy-source", "/upc/src", "x-amz-copy-source-range", "bytes=2-5")
	var res struct{ ETag string }
	xml.Unmarshal(r.Body, &res)
	m.etags[1] = res.ETag
	m.part(2, "tail")
	if r := m.complete(nil, 1, 2); r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	if g := s.mustDo(200, "GET", "/upc/dst", nil); string(g.Body) != "2345tail" {
		t.Fatalf("got %q", g.Body)
	}
	m2 := s.createMPU("/upc/dst2")
	if r := s.do("PUT", "/upc/dst2?partNumber=1&uploadId="+m2.id, nil, "x-amz-copy-source", "/upc/src", "x-amz-copy-source-range", "bytes=5-20"); r.Status != 400 {
		t.Fatalf("range past the end: %d %s", r.Status, r.Body)
	}
}

func TestDeleteObjects(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("bat")
	etA := s.put("/bat/a", "A")
	s.put("/bat/b", "B")
	s.put("/bat/c", "C")
	body := fmt.Sprintf(`<Delete>
	  <Object><Key>a</Key><ETag>%s</ETag></Object>
	  <Object><Key>b</Key><ETag>"wrong"</ETag></Object>
	  <Object><Key>c</Key></Object>
	  <Object><Key>missing</Key><ETag>%s</ETag></Object>
	  <Object><Key>missing2</Key></Object>
	  <Object><Key>c</Key><LastModifiedTime>2025-01-01T00:00:00Z</LastModifiedTime></Object>
	</Delete>`, etA, etA)
	r := s.mustDo(200, "POST", "/bat?delete", []byte(body))
	var res struct {
		Deleted []struct{ Key string }
		Error   []struct{ Key, Code, Message string }
	}
	if err := xml.Unmarshal(r.Body, &res); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, d := range res.Deleted {
		deleted[d.Key] = true
	}
	codes := map[string]string{}
	for _, e := range res.Error {
		codes[e.Key] = e.Code
	}
	if !deleted["a"] || !deleted["c"] || !deleted["missing2"] || len(res.Deleted) != 3 {
		t.Fatalf("deleted %v (%s)", deleted, r.Body)
	}
	if codes["b"] != "PreconditionFailed" || codes["missing"] != "NoSuchKey" || codes["c"] != "NotImplemented" {
		t.Fatalf("errors %v (%s)", codes, r.Body)
	}
	for _, e := range res.Error {
		if e.Key == "b" && e.Message != msgPrecondition {
			t.Fatalf("per-key 412 message %q", e.Message)
		}
	}
	// An unquoted <ETag> matches too, as on S3.
	etB := s.put("/bat/b2", "B2")
	r = s.mustDo(200, "POST", "/bat?delete", []byte("<Delete><Object><Key>b2</Key><ETag>"+strings.Trim(etB, `"`)+"</ETag></Object></Delete>"))
	if !strings.Contains(string(r.Body), "<Deleted><Key>b2</Key>") {
		t.Fatalf("unquoted per-key ETag: %s", r.Body)
	}
	s.mustDo(404, "GET", "/bat/a", nil)
	s.mustDo(200, "GET", "/bat/b", nil)
	// Quiet mode reports errors only.
	r = s.mustDo(200, "POST", "/bat?delete", []byte(`<Delete><Quiet>true</Quiet><Object><Key>b</Key></Object></Delete>`))
	if strings.Contains(string(r.Body), "<Deleted>") {
		t.Fatalf("quiet: %s", r.Body)
	}
	s.mustRefuse(400, "MalformedXML", "POST", "/bat?delete", []byte("<Delete>"))
	// Versioned: a delete marker per key.
	s.versioned("bat", "Enabled")
	s.put("/bat/v", "V")
	r = s.mustDo(200, "POST", "/bat?delete", []byte(`<Delete><Object><Key>v</Key></Object></Delete>`))
	if !strings.Contains(string(r.Body), "<DeleteMarker>true</DeleteMarker>") || !strings.Contains(string(r.Body), "<DeleteMarkerVersionId>") {
		t.Fatalf("versioned batch delete: %s", r.Body)
	}
}
