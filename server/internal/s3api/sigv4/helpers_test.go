package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

const (
	testAK     = "AKIDEXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testRegion = "us-east-1"
)

// outcome is what the test server saw: Verify's verdict and the body read
// through the returned reader.
type outcome struct {
	Status    int
	Code      string
	AccessKey string
	Body      []byte `json:"-"` // kept by recordingServer only
	BodySHA   string
	Checksums map[string]string
	Length    int64
	Encoding  string
	IfNone    string
	IfMatch   string
	Mode      string
}

// testServer runs Verify on every request and reports the outcome as JSON.
// tamper, when set, rewrites the request before Verify sees it.
func testServer(t *testing.T, opts *Options, tamper func(*http.Request)) *httptest.Server {
	t.Helper()
	srv, _ := recordingServer(t, opts, tamper, false)
	return srv
}

// recordingServer is testServer that also keeps every outcome, for
// clients (the SDKs) that do not show the server's answer body.
func recordingServer(t *testing.T, opts *Options, tamper func(*http.Request), tls bool) (*httptest.Server, func() []outcome) {
	t.Helper()
	var mu sync.Mutex
	var seen []outcome
	v := New(Credentials{testAK: testSecret}.Lookup, opts)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tamper != nil {
			tamper(r)
		}
		mode := r.Header.Get("X-Amz-Content-Sha256")
		out := outcome{Mode: mode}
		ak, body, err := v.Verify(r)
		if err == nil {
			out.AccessKey = ak
			out.Length = r.ContentLength
			out.Encoding = r.Header.Get("Content-Encoding")
			out.IfNone = r.Header.Get("If-None-Match")
			out.IfMatch = r.Header.Get("If-Match")
			out.Body, err = io.ReadAll(body)
			out.BodySHA = sha256hex(out.Body)
			body.Close()
			if err == nil {
				out.Checksums = map[string]string{}
				for k, v := range body.(Body).Checksums() {
					out.Checksums[http.CanonicalHeaderKey(k)] = v[0]
				}
			}
		}
		out.Status = 200
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				out.Status, out.Code = 599, err.Error()
			} else {
				out.Status, out.Code = se.Status, se.Code
			}
		}
		mu.Lock()
		seen = append(seen, out)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.WriteHeader(out.Status)
		_ = json.NewEncoder(w).Encode(out)
	}))
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, func() []outcome {
		mu.Lock()
		defer mu.Unlock()
		return append([]outcome(nil), seen...)
	}
}

func do(t *testing.T, req *http.Request) outcome {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var out outcome
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode outcome: %v", err)
	}
	return out
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func want(t *testing.T, got outcome, status int, code string) {
	t.Helper()
	if got.Status != status || got.Code != code {
		t.Fatalf("got %d %q, want %d %q", got.Status, got.Code, status, code)
	}
}

// flipBody wraps the request body so that byte at offset off is flipped in
// transit (after signing, before verification).
func flipBody(off int64) func(*http.Request) {
	return func(r *http.Request) {
		r.Body = &flipper{rc: r.Body, off: off}
	}
}

type flipper struct {
	rc  io.ReadCloser
	off int64
	pos int64
}

func (f *flipper) Read(p []byte) (int, error) {
	n, err := f.rc.Read(p)
	if f.off >= f.pos && f.off < f.pos+int64(n) {
		p[f.off-f.pos] ^= 0x01
	}
	f.pos += int64(n)
	return n, err
}

func (f *flipper) Close() error { return f.rc.Close() }

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}
