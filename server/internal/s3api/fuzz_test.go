package s3api

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// fuzzServer is one handler over one engine, shared by a fuzz target's
// inputs (each fuzz worker process has its own): a bucket "fzb" with an
// object "fzb/k" and an open multipart upload "fzb/mp" with one part.
type fuzzServer struct {
	e  *engine.Engine
	h  *Handler
	up string // the open upload's id
}

func newFuzzServer(f *testing.F) *fuzzServer {
	e, err := engine.Open(f.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	s := &fuzzServer{e: e, h: MustNew(e, &Options{Anonymous: true, MinPartSize: 1})}
	s.must(f, "PUT", "/fzb", "")
	s.reset(f)
	return s
}

// reset restores what a successful input may have consumed: the object
// and an open upload with one part.
func (s *fuzzServer) reset(tb testing.TB) {
	s.must(tb, "PUT", "/fzb/k", "value")
	var res struct{ UploadId string }
	if err := xml.Unmarshal(s.must(tb, "POST", "/fzb/mp?uploads", ""), &res); err != nil {
		tb.Fatal(err)
	}
	s.up = res.UploadId
	s.must(tb, "PUT", "/fzb/mp?partNumber=1&uploadId="+s.up, "part one")
}

func (s *fuzzServer) must(tb testing.TB, method, target, body string) []byte {
	tb.Helper()
	w := s.serve(httptest.NewRequest(method, target, strings.NewReader(body)))
	if w.Code != 200 {
		tb.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
	}
	return w.Body.Bytes()
}

func (s *fuzzServer) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	return w
}

// check sends r and enforces the invariants: no panic (the fuzzer sees
// it), no 5xx but 501, every refusal a well-formed S3 <Error> (HEAD: no
// body), and a refusal writes nothing (the engine's committed index and
// its blob files are unchanged). It reports whether r succeeded.
func (s *fuzzServer) check(t *testing.T, r *http.Request) bool {
	t.Helper()
	index, blobs := s.e.Index(), s.blobCount(t)
	w := s.serve(r)
	if w.Code >= 500 && w.Code != http.StatusNotImplemented {
		t.Fatalf("%s %s: %d %s", r.Method, r.URL, w.Code, w.Body)
	}
	if w.Code < 300 || w.Code == http.StatusNotModified {
		return w.Code < 300
	}
	if r.Method != http.MethodHead {
		var e struct {
			XMLName xml.Name `xml:"Error"`
			Code    string
			Message string
		}
		if err := xml.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" {
			t.Fatalf("%s %s: %d with a body that is not an S3 error: %q", r.Method, r.URL, w.Code, w.Body)
		}
	}
	if s.e.Index() != index || s.blobCount(t) != blobs {
		t.Fatalf("%s %s: refused with %d %s, yet wrote (index %d→%d, blobs %d→%d)", r.Method, r.URL, w.Code, w.Body,
			index, s.e.Index(), blobs, s.blobCount(t))
	}
	return false
}

func (s *fuzzServer) blobCount(t *testing.T) int {
	ts := &testServer{t: t, e: s.e}
	return countBlobs(t, ts)
}

// FuzzXMLBodies: arbitrary CompleteMultipartUpload, DeleteObjects and
// versioning-configuration bodies.
func FuzzXMLBodies(f *testing.F) {
	f.Add(uint8(0), `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>`)
	f.Add(uint8(0), `<CompleteMultipartUpload><Part><PartNumber>99999999999</PartNumber></Part><Part><PartNumber>-1</PartNumber></Part></CompleteMultipartUpload>`)
	f.Add(uint8(1), `<Delete><Quiet>true</Quiet><Object><Key>k</Key><VersionId>null</VersionId></Object></Delete>`)
	f.Add(uint8(1), `<Delete><Object><Key></Key></Object><Object><Key>k</Key><ETag>*</ETag></Object></Delete>`)
	f.Add(uint8(2), `<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>`)
	f.Add(uint8(2), `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><VersioningConfiguration><Status>&a;</Status></VersioningConfiguration>`)
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, kind uint8, body string) {
		target := []string{"/fzb/mp?uploadId=" + s.up, "/fzb?delete", "/fzb?versioning"}[kind%3]
		method := []string{"POST", "POST", "PUT"}[kind%3]
		if s.check(t, httptest.NewRequest(method, target, strings.NewReader(body))) && kind%3 != 2 {
			s.reset(t)
		}
	})
}

// FuzzRouting: arbitrary methods, paths, queries and headers through the
// router and every operation's argument parsing.
func FuzzRouting(f *testing.F) {
	f.Add(uint8(0), "/fzb/k", "", "Range: bytes=0-1", "")
	f.Add(uint8(1), "/fzb/new", "", "x-amz-copy-source: /fzb/k\nx-amz-metadata-directive: REPLACE\nx-amz-meta-a: 1", "")
	f.Add(uint8(1), "/fzb/mp", "partNumber=2&uploadId=UP", "x-amz-copy-source: fzb/k\nx-amz-copy-source-range: bytes=0-", "")
	f.Add(uint8(0), "/fzb", "list-type=2&max-keys=1&continuation-token=%00&start-after=k&delimiter=/", "", "")
	f.Add(uint8(0), "/fzb", "versions&key-marker=k&version-id-marker=zzz", "", "")
	f.Add(uint8(0), "/fzb", "uploads&upload-id-marker=x&max-uploads=0", "", "")
	f.Add(uint8(0), "/fzb/mp", "uploadId=UP&part-number-marker=-1&max-parts=99999", "", "")
	f.Add(uint8(2), "/fzb/k", "versionId=null", "If-Match: *", "")
	f.Add(uint8(3), "/fzb/k", "", "If-None-Match: \"x\"\nIf-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT", "")
	f.Add(uint8(1), "/fzb/k", "", "If-None-Match: *\nContent-MD5: AAAA\nx-amz-checksum-crc32: AAAAAA==", "v")
	f.Add(uint8(4), "/fzb/mp", "uploads", "x-amz-meta-a: 1\nContent-Type: a/b", "")
	f.Add(uint8(1), "/fzb//..%2F/k", "acl", "", "")
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, m uint8, path, rawQuery, headers, body string) {
		method := []string{"GET", "PUT", "DELETE", "HEAD", "POST", "OPTIONS", "PATCH"}[int(m)%7]
		if !strings.HasPrefix(path, "/") || len(body) > 1<<16 {
			return
		}
		u, err := url.Parse("http://s3.test" + path)
		if err != nil {
			return
		}
		u.RawQuery = strings.ReplaceAll(rawQuery, "UP", s.up)
		r := httptest.NewRequest(method, "http://s3.test/", strings.NewReader(body))
		r.URL, r.RequestURI = u, u.RequestURI()
		for _, line := range strings.Split(headers, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && k != "" && !strings.ContainsAny(k, " \r\t") {
				r.Header.Add(k, strings.TrimSpace(v))
			}
		}
		// Only a DELETE or a POST (Complete, DeleteObjects) can consume
		// what reset restores.
		if s.check(t, r) && (method == "DELETE" || method == "POST") {
			s.reset(t)
		}
	})
}
