package s3api

import (
	"crypto/md5"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// mpu drives one multipart upload over HTTP.
type mpu struct {
	s     *testServer
	path  string
	id    string
	etags map[int]string
}

func (s *testServer) createMPU(path string, hdr ...string) *mpu {
	s.t.Helper()
	r := s.mustDo(200, "POST", path+"?uploads", nil, hdr...)
	var res struct{ UploadId string }
	if err := xml.Unmarshal(r.Body, &res); err != nil || res.UploadId == "" {
		s.t.Fatalf("create: %s", r.Body)
	}
	return &mpu{s: s, path: path, id: res.UploadId, etags: map[int]string{}}
}

func (m *mpu) part(n int, body string) {
	m.s.t.Helper()
	r := m.s.mustDo(200, "PUT", fmt.Sprintf("%s?partNumber=%d&uploadId=%s", m.path, n, m.id), []byte(body))
	m.etags[n] = r.Header.Get("ETag")
}

func (m *mpu) completeXML(nums ...int) []byte {
	var b strings.Builder
	b.WriteString("<CompleteMultipartUpload>")
	for _, n := range nums {
		fmt.Fprintf(&b, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", n, m.etags[n])
	}
	b.WriteString("</CompleteMultipartUpload>")
	return []byte(b.String())
}

func (m *mpu) complete(hdr []string, nums ...int) resp {
	return m.s.do("POST", m.path+"?uploadId="+m.id, m.completeXML(nums...), hdr...)
}

func TestMultipartUpload(t *testing.T) {
	s := newTestServer(t, &Options{Anonymous: true, MinPartSize: 1000})
	s.bucket("mpb")
	m := s.createMPU("/mpb/big", "Content-Type", "video/mp4", "x-amz-meta-k", "v")
	p1, p2, p3 := strings.Repeat("a", 1000), strings.Repeat("b", inlineMax+5), "tail"
	m.part(1, p1)
	m.part(2, "replaced later")
	m.part(2, p2)
	m.part(3, p3)
	// ListParts and ListMultipartUploads see it.
	lp := s.mustDo(200, "GET", "/mpb/big?uploadId="+m.id, nil)
	if strings.Count(string(lp.Body), "<Part>") != 3 {
		t.Fatalf("list parts: %s", lp.Body)
	}
	lu := s.mustDo(200, "GET", "/mpb?uploads", nil)
	if !strings.Contains(string(lu.Body), m.id) {
		t.Fatalf("list uploads: %s", lu.Body)
	}
	// An upload in progress does not make the key exist.
	s.mustDo(404, "GET", "/mpb/big", nil)
	r := m.complete(nil, 1, 2, 3)
	if r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	var res struct{ ETag string }
	xml.Unmarshal(r.Body, &res)
	var cat []byte
	for _, p := range []string{p1, p2, p3} {
		sum := md5.Sum([]byte(p))
		cat = append(cat, sum[:]...)
	}
	want := fmt.Sprintf(`"%x-3"`, md5.Sum(cat))
	if res.ETag != want {
		t.Fatalf("multipart etag %s, want %s", res.ETag, want)
	}
	g := s.mustDo(200, "GET", "/mpb/big", nil)
	if string(g.Body) != p1+p2+p3 || g.Header.Get("ETag") != want || g.Header.Get("Content-Type") != "video/mp4" || g.Header.Get("x-amz-meta-k") != "v" {
		t.Fatalf("get: %d bytes %v", len(g.Body), g.Header)
	}
	// A range across the part boundary.
	rg := s.mustDo(206, "GET", "/mpb/big", nil, "Range", "bytes=998-1001")
	if string(rg.Body) != "aabb" {
		t.Fatalf("range across parts: %q", rg.Body)
	}
	// GET by part number.
	pn := s.mustDo(206, "GET", "/mpb/big?partNumber=2", nil)
	if string(pn.Body) != p2 || pn.Header.Get("x-amz-mp-parts-count") != "3" ||
		pn.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-%d/%d", 1000+len(p2)-1, len(p1+p2+p3)) {
		t.Fatalf("part 2: %d bytes, %v", len(pn.Body), pn.Header)
	}
	s.mustRefuse(416, "InvalidPartNumber", "GET", "/mpb/big?partNumber=4", nil)
	// The upload is gone; the replaced part's blob was removed.
	s.mustDo(404, "GET", "/mpb/big?uploadId="+m.id, nil)
	if n := countBlobs(t, s); n != 3 {
		t.Fatalf("%d blobs, want 3 (one per part)", n)
	}
	// Overwriting the object removes its part blobs.
	s.put("/mpb/big", "small")
	if n := countBlobs(t, s); n != 0 {
		t.Fatalf("%d blobs after overwrite, want 0", n)
	}
}

func TestMultipartErrors(t *testing.T) {
	s := newTestServer(t, &Options{Anonymous: true, MinPartSize: 1000})
	s.bucket("mpb")
	m := s.createMPU("/mpb/k")
	m.part(1, "short")
	m.part(2, "x")
	for _, tc := range []struct {
		name   string
		status int
		code   string
		send   func() resp
	}{
		{"part too small", 400, "EntityTooSmall", func() resp { return m.complete(nil, 1, 2) }},
		{"wrong order", 400, "InvalidPartOrder", func() resp { return m.complete(nil, 2, 1) }},
		{"missing part", 400, "InvalidPart", func() resp { return m.complete(nil, 1, 3) }},
		{"wrong etag", 400, "InvalidPart", func() resp {
			return s.do("POST", "/mpb/k?uploadId="+m.id, []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"00"</ETag></Part></CompleteMultipartUpload>`))
		}},
		{"malformed xml", 400, "MalformedXML", func() resp { return s.do("POST", "/mpb/k?uploadId="+m.id, []byte("<Complete")) }},
		{"empty part list", 400, "MalformedXML", func() resp {
			return s.do("POST", "/mpb/k?uploadId="+m.id, []byte("<CompleteMultipartUpload></CompleteMultipartUpload>"))
		}},
		{"part number 0", 400, "InvalidArgument", func() resp { return s.do("PUT", "/mpb/k?partNumber=0&uploadId="+m.id, []byte("x")) }},
		{"part number 10001", 400, "InvalidArgument", func() resp { return s.do("PUT", "/mpb/k?partNumber=10001&uploadId="+m.id, []byte("x")) }},
		{"unknown upload", 404, "NoSuchUpload", func() resp { return s.do("PUT", "/mpb/k?partNumber=1&uploadId=nope", []byte("x")) }},
		{"create in missing bucket", 404, "NoSuchBucket", func() resp { return s.do("POST", "/nobucket/k?uploads", nil) }},
		{"complete INM etag → 501", 501, "NotImplemented", func() resp { return m.complete([]string{"If-None-Match", `"x"`}, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			if r.Status != tc.status || r.err().Code != tc.code {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
		})
	}
	// The last part may be small: completing with part 2 alone works.
	if r := m.complete(nil, 2); r.Status != 200 {
		t.Fatalf("single small last part: %d %s", r.Status, r.Body)
	}
	// Abort removes the upload and its blobs.
	m2 := s.createMPU("/mpb/k2")
	m2.part(1, "data")
	s.mustDo(204, "DELETE", "/mpb/k2?uploadId="+m2.id, nil)
	s.mustDo(404, "DELETE", "/mpb/k2?uploadId="+m2.id, nil)
	if n := countBlobs(t, s); n != 1 {
		t.Fatalf("%d blobs, want 1 (part 2 of k)", n)
	}
}

// TestMultipartConditionalSnapshot is the multipart snapshot table of
// docs/wire-s3.md ("Concurrent writes"): S3 remembers the key's state at
// CreateMultipartUpload.
func TestMultipartConditionalSnapshot(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("mcb")
	INM := []string{"If-None-Match", "*"}
	IM := func(e string) []string { return []string{"If-Match", e} }
	rows := []struct {
		name    string
		initial string // "" = key absent
		between func(path string) string
		hdr     func(before, after string) []string
		status  int
		code    string
		cond    string
	}{
		{"nothing; key existed; INM", "v0", func(string) string { return "" },
			func(b, a string) []string { return INM }, 412, "PreconditionFailed", "If-None-Match"},
		{"key deleted; INM", "v0", func(p string) string { s.mustDo(204, "DELETE", p, nil); return "" },
			func(b, a string) []string { return INM }, 409, "ConditionalRequestConflict", "If-None-Match"},
		{"another PUT created the key; INM", "", func(p string) string { return s.put(p, "other") },
			func(b, a string) []string { return INM }, 412, "PreconditionFailed", "If-None-Match"},
		{"PUT new content; IM old etag", "v0", func(p string) string { return s.put(p, "v1") },
			func(b, a string) []string { return IM(b) }, 412, "PreconditionFailed", "If-Match"},
		{"PUT new content; IM current etag", "v0", func(p string) string { return s.put(p, "v1") },
			func(b, a string) []string { return IM(a) }, 409, "ConditionalRequestConflict", "If-Match"},
		{"PUT identical content; IM that etag", "v0", func(p string) string { return s.put(p, "v0") },
			func(b, a string) []string { return IM(a) }, 409, "ConditionalRequestConflict", "If-Match"},
		{"DELETE; IM", "v0", func(p string) string { s.mustDo(204, "DELETE", p, nil); return "" },
			func(b, a string) []string { return IM(b) }, 404, "NoSuchKey", ""},
		{"DELETE then PUT; IM new etag", "v0", func(p string) string { s.mustDo(204, "DELETE", p, nil); return s.put(p, "v2") },
			func(b, a string) []string { return IM(a) }, 409, "ConditionalRequestConflict", "If-Match"},
		{"unchanged; IM current etag", "v0", func(string) string { return "" },
			func(b, a string) []string { return IM(b) }, 200, "", ""},
		{"unchanged absent; INM", "", func(string) string { return "" },
			func(b, a string) []string { return INM }, 200, "", ""},
	}
	for i, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("/mcb/k%d", i)
			before := ""
			if tc.initial != "" {
				before = s.put(path, tc.initial)
			}
			m := s.createMPU(path)
			m.part(1, "mpu-body")
			after := tc.between(path)
			r := m.complete(tc.hdr(before, after), 1)
			e := r.err()
			if r.Status != tc.status || e.Code != tc.code || e.Condition != tc.cond {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			if tc.status == 409 && e.Key != fmt.Sprintf("k%d", i) {
				t.Fatalf("409 without Key: %s", r.Body)
			}
			if tc.status == 409 && tc.cond == "If-None-Match" {
				// A fresh MPU then succeeds.
				m2 := s.createMPU(path)
				m2.part(1, "again")
				if r := m2.complete(INM, 1); r.Status != 200 {
					t.Fatalf("fresh MPU after 409: %d %s", r.Status, r.Body)
				}
			}
		})
	}
}

// TestRepeatedComplete: a CompleteMultipartUpload repeated after it
// succeeded (an SDK retry after a lost response) answers 200 with the same
// ETag and version, and changes nothing; a different part list for the
// completed upload stays an error.
func TestRepeatedComplete(t *testing.T) {
	s := newTestServer(t, nil)
	for _, versioning := range []string{"", "Enabled"} {
		bucket := "rc" + strings.ToLower(versioning) + "b"
		s.bucket(bucket)
		if versioning != "" {
			s.versioned(bucket, versioning)
		}
		m := s.createMPU("/" + bucket + "/obj")
		m.part(1, "first part")
		m.part(2, "second")
		first := m.complete(nil, 1, 2)
		if first.Status != 200 {
			t.Fatalf("complete: %d %s", first.Status, first.Body)
		}
		before := s.stateOf()
		again := m.complete(nil, 1, 2)
		if again.Status != 200 || string(again.Body) != string(first.Body) ||
			again.Header.Get("x-amz-version-id") != first.Header.Get("x-amz-version-id") {
			t.Fatalf("%s: repeated complete: %d %s %q, want 200 %s %q", bucket, again.Status, again.Body,
				again.Header.Get("x-amz-version-id"), first.Body, first.Header.Get("x-amz-version-id"))
		}
		if after := s.stateOf(); after != before {
			t.Fatalf("repeated complete changed state:\n%s\n%s", before, after)
		}
		if r := m.complete(nil, 2); r.Status != 404 || r.err().Code != "NoSuchUpload" {
			t.Fatalf("%s: complete with another part list: %d %s", bucket, r.Status, r.Body)
		}
		// Once the object is replaced the upload is gone for good.
		s.put("/"+bucket+"/obj", "overwritten")
		if versioning == "" {
			if r := m.complete(nil, 1, 2); r.Status != 404 || r.err().Code != "NoSuchUpload" {
				t.Fatalf("%s: complete after overwrite: %d %s", bucket, r.Status, r.Body)
			}
		}
	}
}
