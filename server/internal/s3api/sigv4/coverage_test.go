package sigv4

import (
	"errors"
	"testing"
	"time"
)

// TestHeadersNotSigned: Verify's own verdicts on header coverage, for
// header and query auth: unsigned x-amz-* headers are refused and named;
// x-amz-content-sha256 is exempt; Content-MD5 must be signed in both forms;
// Content-Type may be unsigned in both (AWS's rule, issue 24 item 1); a
// split signed value is rebound to the signed one.
func TestHeadersNotSigned(t *testing.T) {
	v := New(Credentials{testAK: testSecret}.Lookup, &Options{Now: func() time.Time { return fuzzNow }})
	for _, tc := range []struct {
		name, headers, signed string
		presign               bool
		want                  string // HeadersNotSigned; "" means verified
	}{
		{"header: copy source unsigned", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nX-Amz-Copy-Source: /b/s", "host;x-amz-content-sha256;x-amz-date", false, "x-amz-copy-source"},
		{"header: two unsigned", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nX-Amz-Meta-B: 1\nX-Amz-Meta-A: 2", "host;x-amz-content-sha256;x-amz-date", false, "x-amz-meta-a, x-amz-meta-b"},
		{"header: content-sha256 exempt", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD", "host;x-amz-date", false, ""},
		{"header: content-type may be unsigned", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nContent-Type: text/html\nCache-Control: no-cache", "host;x-amz-content-sha256;x-amz-date", false, ""},
		{"header: content-md5 unsigned", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nContent-Md5: 1B2M2Y8AsgTpgAmY7PhCfg==\nX-Amz-Meta-A: 1", "host;x-amz-content-sha256;x-amz-date", false, "content-md5, x-amz-meta-a"},
		{"query: content-md5 unsigned", "Content-Md5: 1B2M2Y8AsgTpgAmY7PhCfg==", "host", true, "content-md5"},
		{"header: all signed", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nContent-Type: a/b\nX-Amz-Meta-A: 1", "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-a", false, ""},
		{"query: copy source unsigned", "X-Amz-Copy-Source: /b/s", "host", true, "x-amz-copy-source"},
		{"query: content-type may be unsigned", "Content-Type: text/html", "host", true, ""},
		{"query: content-sha256 exempt", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD", "host", true, ""},
	} {
		r := fuzzRequest("PUT", "/b/k", "", tc.headers, "")
		signFuzzed(r, tc.signed, tc.presign)
		_, _, err := v.Verify(r)
		var se *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &se) || !errors.Is(err, ErrHeadersNotSigned) || se.Status != 403 || se.HeadersNotSigned != tc.want):
			t.Errorf("%s: got %+v, want 403 AccessDenied naming %q", tc.name, err, tc.want)
		}
	}
	r := fuzzRequest("PUT", "/b/k", "", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nX-Amz-Copy-Source: /b/a,b", "")
	signFuzzed(r, "host;x-amz-content-sha256;x-amz-copy-source;x-amz-date", false)
	r.Header["X-Amz-Copy-Source"] = []string{"/b/a", "b"}
	if _, _, err := v.Verify(r); err != nil || len(r.Header["X-Amz-Copy-Source"]) != 1 || r.Header.Get("X-Amz-Copy-Source") != "/b/a,b" {
		t.Fatalf("split signed header: %v, now %q", err, r.Header["X-Amz-Copy-Source"])
	}
}

// TestMissingContentSHA256: with header auth x-amz-content-sha256 must be
// present (AWS: 400 InvalidRequest "Missing required header for this
// request: x-amz-content-sha256"); a presigned URL defaults to
// UNSIGNED-PAYLOAD. Part of AWS's signing rule (issue 24 item 1).
func TestMissingContentSHA256(t *testing.T) {
	v := New(Credentials{testAK: testSecret}.Lookup, &Options{Now: func() time.Time { return fuzzNow }})
	r := fuzzRequest("PUT", "/b/k", "", "Content-Type: text/plain", "")
	signFuzzed(r, "host;x-amz-date", false)
	if _, _, err := v.Verify(r); !errors.Is(err, ErrMissingContentSHA256) {
		t.Fatalf("header auth without x-amz-content-sha256: %v", err)
	}
	r = fuzzRequest("PUT", "/b/k", "", "Content-Type: text/plain", "")
	signFuzzed(r, "host", true)
	if _, _, err := v.Verify(r); err != nil {
		t.Fatalf("presigned without x-amz-content-sha256: %v", err)
	}
}
