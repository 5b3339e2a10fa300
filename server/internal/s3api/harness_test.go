package s3api

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// testServer is our handler on httptest over a temp-dir engine.
type testServer struct {
	t   testing.TB
	e   *engine.Engine
	h   *Handler
	srv *httptest.Server
}

func newTestServer(t testing.TB, opts *Options) *testServer {
	t.Helper()
	e := enginetest.Open(t)
	o := Options{Anonymous: true, MinPartSize: 5}
	if opts != nil {
		o = *opts
	}
	h := MustNew(e, &o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{t: t, e: e, h: h, srv: srv}
}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// s3err is a parsed <Error> body.
type s3err struct {
	Code, Message, Key, Condition, Header, VersionId, Method, ResourceType, Resource, RequestId string
	AdditionalMessage                                                                           string `xml:"additionalMessage"`
}

func (r resp) err() s3err {
	var e s3err
	_ = xml.Unmarshal(r.Body, &e)
	return e
}

// refusal is a table row: a request that must be refused (body "" for
// none; hdr is name, value pairs) and the error answer it must get.
type refusal struct {
	name, method, path, body string
	hdr                      []string
	status                   int
	code                     string
}

// check sends the request on s and fails t unless the answer is the
// refusal's status and error code.
func (tc refusal) check(t *testing.T, s *testServer) {
	t.Helper()
	var body []byte
	if tc.body != "" {
		body = []byte(tc.body)
	}
	r := s.do(tc.method, tc.path, body, tc.hdr...)
	if r.Status != tc.status || r.err().Code != tc.code {
		t.Fatalf("got %d %.300s, want %d %s", r.Status, r.Body, tc.status, tc.code)
	}
}

// mustGetContaining GETs path and fails the test unless it is answered
// 200 with a body containing want.
func (s *testServer) mustGetContaining(path, want string) {
	s.t.Helper()
	if r := s.mustDo(200, "GET", path, nil); !strings.Contains(string(r.Body), want) {
		s.t.Fatalf("GET %s: %.500s, want it to contain %s", path, r.Body, want)
	}
}

// mustRefuse sends one request (as do) and fails the test unless it is
// answered status with the S3 error code.
func (s *testServer) mustRefuse(status int, code, method, path string, body []byte, hdr ...string) {
	s.t.Helper()
	if r := s.do(method, path, body, hdr...); r.Status != status || r.err().Code != code {
		s.t.Fatalf("%s %s: got %d %.300s, want %d %s", method, path, r.Status, r.Body, status, code)
	}
}

// do sends one request; hdr is name, value pairs. path is sent verbatim
// (already escaped). Transport failures fail the test.
func (s *testServer) do(method, path string, body []byte, hdr ...string) resp {
	s.t.Helper()
	r, err := s.try(method, path, body, hdr...)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// try is do for goroutines: it returns transport failures.
func (s *testServer) try(method, path string, body []byte, hdr ...string) (resp, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		return resp{}, err
	}
	if strings.Contains(path, "//") || strings.Contains(path, "..") {
		req.URL.Opaque = "//" + req.URL.Host + strings.SplitN(path, "?", 2)[0]
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header[http.CanonicalHeaderKey(hdr[i])] = []string{hdr[i+1]}
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{res.StatusCode, res.Header, b}, nil
}

func (s *testServer) mustDo(want int, method, path string, body []byte, hdr ...string) resp {
	s.t.Helper()
	r := s.do(method, path, body, hdr...)
	if r.Status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

func (s *testServer) bucket(name string) {
	s.t.Helper()
	s.mustDo(200, "PUT", "/"+name, nil)
}

// versionedBucket creates bucket name with versioning enabled.
func (s *testServer) versionedBucket(name string) {
	s.t.Helper()
	s.bucket(name)
	s.versioned(name, "Enabled")
}

func (s *testServer) versioned(name, status string) {
	s.t.Helper()
	s.mustDo(200, "PUT", "/"+name+"?versioning",
		[]byte(`<VersioningConfiguration><Status>`+status+`</Status></VersioningConfiguration>`))
}

func (s *testServer) put(path, body string, hdr ...string) string {
	s.t.Helper()
	return s.mustDo(200, "PUT", path, []byte(body), hdr...).Header.Get("ETag")
}

// countBlobs counts committed blob files in the engine's data directory.
func countBlobs(t testing.TB, s *testServer) int {
	t.Helper()
	return len(enginetest.Blobs(t, s.e))
}
