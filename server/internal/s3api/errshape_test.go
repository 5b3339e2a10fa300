package s3api

import (
	"encoding/xml"
	"net/http"
	"testing"
)

// TestErrorShapes: the wire details of errors that clients depend on.
func TestErrorShapes(t *testing.T) {
	s := newTestServer(t, nil)
	s.versionedBucket("shp")
	et := s.put("/shp/k", "v")
	marker := s.mustDo(204, "DELETE", "/shp/k", nil).Header.Get("x-amz-version-id")

	// A read addressed to a delete marker's version: 405 with the marker's
	// headers (docs/wire-s3.md, "Delete markers"), on GET with the XML body
	// and on HEAD without.
	for _, method := range []string{"GET", "HEAD"} {
		r := s.mustDo(405, method, "/shp/k?versionId="+marker, nil)
		lm, err := http.ParseTime(r.Header.Get("Last-Modified"))
		if err != nil || lm.IsZero() || r.Header.Get("x-amz-delete-marker") != "true" || r.Header.Get("x-amz-version-id") != marker {
			t.Fatalf("%s marker version headers: %v", method, r.Header)
		}
		if method == "HEAD" {
			if len(r.Body) != 0 {
				t.Fatalf("HEAD 405 with a body %q", r.Body)
			}
			continue
		}
		if e := r.err(); e.Code != "MethodNotAllowed" || e.Method != "GET" || e.ResourceType != "DeleteMarker" {
			t.Fatalf("405 body %s", r.Body)
		}
	}
	// The current version is a marker: 404 NoSuchKey plus the marker headers.
	if r := s.mustDo(404, "GET", "/shp/k", nil); r.err().Code != "NoSuchKey" || r.Header.Get("x-amz-delete-marker") != "true" || r.Header.Get("x-amz-version-id") != marker {
		t.Fatalf("GET under a marker: %v %s", r.Header, r.Body)
	}

	// HEAD errors carry the status and headers, never a body.
	s.put("/shp/live", "v")
	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
	}{
		{"412", "/shp/live", []string{"If-Match", `"nope"`}, 412},
		{"304", "/shp/live", []string{"If-None-Match", md5ETag("v")}, 304},
		{"missing key", "/shp/none", nil, 404},
		{"missing bucket", "/nobucket/k", nil, 404},
		{"missing bucket (HeadBucket)", "/nobucket", nil, 404},
		{"bad version id", "/shp/live?versionId=zzz", nil, 400},
		{"missing version", "/shp/live?versionId=" + versionID(1), nil, 404},
		{"bad bucket name", "/Bad_Name/k", nil, 400},
		{"range not satisfiable", "/shp/live", []string{"Range", "bytes=9-"}, 416},
	} {
		r := s.do("HEAD", tc.path, nil, tc.hdr...)
		if r.Status != tc.status || len(r.Body) != 0 {
			t.Errorf("HEAD %s: %d %q, want %d and no body", tc.name, r.Status, r.Body, tc.status)
		}
		if r.Header.Get("x-amz-request-id") == "" {
			t.Errorf("HEAD %s: no x-amz-request-id", tc.name)
		}
	}

	// Every error body has Code, Message, Resource and RequestId; a 412
	// names its Condition with S3's message (no trailing period).
	r := s.mustDo(412, "GET", "/shp/live", nil, "If-Match", `"`+et+`x"`)
	var body struct {
		XMLName                                       xml.Name
		Code, Message, Condition, Resource, RequestId string
	}
	if err := xml.Unmarshal(r.Body, &body); err != nil || body.XMLName.Local != "Error" {
		t.Fatalf("412 body %s", r.Body)
	}
	if body.Code != "PreconditionFailed" || body.Message != msgPrecondition || body.Condition != "If-Match" ||
		body.Resource != "/shp/live" || body.RequestId == "" || body.RequestId != r.Header.Get("x-amz-request-id") {
		t.Fatalf("412 body %+v", body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/xml" {
		t.Fatalf("error Content-Type %q", ct)
	}
}
