package sigv4

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fuzzNow is the fuzz targets' clock, and the X-Amz-Date they sign with.
var fuzzNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fuzzRequest builds a request from fuzzed parts: headers come as
// "Name: value" lines. It returns nil when the parts are not an HTTP
// request at all (an unparsable path).
func fuzzRequest(method, path, rawQuery, headers, body string) *http.Request {
	u, err := url.Parse("http://example.com" + path)
	if err != nil || method == "" || strings.ContainsAny(method, " \r\n") {
		return nil
	}
	u.RawQuery = rawQuery
	r := &http.Request{Method: method, URL: u, Host: "example.com", Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
	for _, line := range strings.Split(headers, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k != "" && !strings.ContainsAny(k, " \r\t") {
			r.Header.Add(k, strings.TrimSpace(v))
		}
	}
	return r
}

// signFuzzed gives r a valid signature over the headers named by signed
// (";"-separated, as the fuzzer wrote them), by header or by query, so
// that the target reaches what happens after the signature check.
func signFuzzed(r *http.Request, signed string, presign bool) {
	sc := scope{date: fuzzNow.Format(scopeDateFormat), region: "us-east-1", service: "s3"}
	cred := testAK + "/" + sc.String()
	date := fuzzNow.Format(amzDateFormat)
	if presign {
		q := r.URL.Query()
		q.Set("X-Amz-Algorithm", algorithm)
		q.Set("X-Amz-Credential", cred)
		q.Set("X-Amz-Date", date)
		q.Set("X-Amz-Expires", "300")
		q.Set("X-Amz-SignedHeaders", signed)
		q.Del("X-Amz-Signature")
		r.URL.RawQuery = q.Encode()
	} else {
		r.Header.Set("X-Amz-Date", date)
	}
	pairs := queryPairs(r.URL.RawQuery)
	payload, err := payloadHash(r, pairs, presign)
	if err != nil {
		payload = UnsignedPayload
	}
	key := signingKey(testSecret, sc)
	sig := signHex(key, stringToSign(fuzzNow, sc, canonicalRequest(r, pairs, strings.Split(signed, ";"), payload)))
	if presign {
		r.URL.RawQuery += "&X-Amz-Signature=" + sig
		return
	}
	r.Header.Set("Authorization", algorithm+" Credential="+cred+", SignedHeaders="+signed+", Signature="+sig)
}

// checkVerify runs Verify on r and checks the invariants: no panic, every
// refusal (from Verify or from reading the body) a 4xx *Error, the body
// never longer than declared, and on success every x-amz-* header signed.
func checkVerify(t *testing.T, r *http.Request) {
	v := New(Credentials{testAK: testSecret}.Lookup, &Options{Now: func() time.Time { return fuzzNow }, MaxChunkSize: 1 << 16})
	_, body, err := v.Verify(r)
	if err != nil {
		requireClientError(t, err)
		return
	}
	defer body.Close()
	if names := unsignedHeaders(r, signedList(r)); len(names) > 0 {
		t.Fatalf("verified with unsigned headers %v", names)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	if err != nil {
		requireClientError(t, err)
	} else if r.ContentLength >= 0 && n > r.ContentLength {
		t.Fatalf("read %d bytes, declared %d", n, r.ContentLength)
	}
}

// signedList is the signed header list of a verified request.
func signedList(r *http.Request) []string {
	if r.Header.Get("Authorization") == "" {
		s := r.URL.Query().Get("X-Amz-SignedHeaders")
		return strings.Split(s, ";")
	}
	_, rest, _ := strings.Cut(r.Header.Get("Authorization"), "SignedHeaders=")
	s, _, _ := strings.Cut(rest, ",")
	return strings.Split(s, ";")
}

func requireClientError(t *testing.T, err error) {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	if se.Status < 400 || se.Status > 499 || se.Code == "" || se.Message == "" {
		t.Fatalf("refusal %+v is not a 4xx S3 error", se)
	}
}

// FuzzVerifyAuthHeader: arbitrary requests with an Authorization header,
// either as the fuzzer wrote it or carrying a valid signature over the
// fuzzed SignedHeaders list.
func FuzzVerifyAuthHeader(f *testing.F) {
	f.Add("PUT", "/b/k", "", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nX-Amz-Copy-Source: /b/src", "body", "host;x-amz-content-sha256;x-amz-date", true)
	f.Add("PUT", "/b/k", "", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\nX-Amz-Copy-Source: /b/src", "", "host;x-amz-content-sha256;x-amz-copy-source;x-amz-date", true)
	f.Add("PUT", "/b/k", "", "X-Amz-Content-Sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\nX-Amz-Decoded-Content-Length: 5\nX-Amz-Trailer: x-amz-checksum-crc32\nContent-Encoding: aws-chunked",
		"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n", "content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-trailer", true)
	f.Add("PUT", "/b/k", "", "X-Amz-Content-Sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\nX-Amz-Decoded-Content-Length: 5",
		"5;chunk-signature=00\r\nhello\r\n0;chunk-signature=00\r\n\r\n", "host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length", true)
	f.Add("GET", "/b/k", "uploads", "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\nX-Amz-Date: 20261130T120000Z\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD", "", "", false)
	f.Add("GET", "/", "", "Authorization: AWS abc:def", "", "", false)
	f.Add("PUT", "/b/k", "", "X-Amz-Content-Sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\nX-Amz-Meta-A: 1\nX-Amz-Meta-A: 2", "", "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a", true)
	f.Fuzz(verifyFuzzed(false))
}

// FuzzVerifyPresigned: arbitrary presigned-URL requests, as the fuzzer
// wrote the X-Amz-* query or carrying a valid signature over the fuzzed
// X-Amz-SignedHeaders list.
func FuzzVerifyPresigned(f *testing.F) {
	f.Add("PUT", "/b/k", "If-None-Match=%2A", "X-Amz-Copy-Source: /b/src", "body", "host", true)
	f.Add("PUT", "/b/k", "partNumber=1&uploadId=x", "If-Match: \"a\"", "body", "host", true)
	f.Add("GET", "/b/k", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261130%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261130T120000Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Signature=00", "", "", "", false)
	f.Add("GET", "/b/k", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=-1", "", "", "", false)
	f.Add("GET", "/b/k", "AWSAccessKeyId=a&Signature=b", "", "", "", false)
	f.Add("PUT", "/b/k", "X-Amz-Content-Sha256=STREAMING-UNSIGNED-PAYLOAD-TRAILER", "X-Amz-Decoded-Content-Length: 1", "1\r\na\r\n0\r\n\r\n", "host;x-amz-decoded-content-length", true)
	f.Fuzz(verifyFuzzed(true))
}

// verifyFuzzed is the target of both Verify fuzzers: the fuzzed request,
// signed (when sign) over the fuzzed signed-header list in the header or,
// when presigned, in the query, must get a verdict that checkVerify
// accepts.
func verifyFuzzed(presigned bool) func(t *testing.T, method, path, rawQuery, headers, body, signed string, sign bool) {
	return func(t *testing.T, method, path, rawQuery, headers, body, signed string, sign bool) {
		r := fuzzRequest(method, path, rawQuery, headers, body)
		if r == nil {
			return
		}
		if sign {
			signFuzzed(r, signed, presigned)
		}
		checkVerify(t, r)
	}
}

// FuzzDechunk: the decoder of unsigned aws-chunked bodies (anonymous mode)
// under arbitrary payload-mode, encoding, trailer and length headers.
func FuzzDechunk(f *testing.F) {
	f.Add(StreamingUnsignedTrailer, "aws-chunked", "x-amz-checksum-crc32", "5", "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n")
	f.Add("", "aws-chunked,gzip", "", "3", "3\r\nabc\r\n0\r\n\r\n")
	f.Add(StreamingUnsignedTrailer, "", "x-amz-checksum-sha256", "0", "0\r\nx-amz-checksum-sha256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\r\n\r\n")
	f.Add(StreamingSigned, "aws-chunked", "", "1", "")
	f.Add(StreamingUnsignedTrailer, "aws-chunked", "x-amz-checksum-crc64nvme", "-1", "ffffffff\r\n")
	f.Fuzz(func(t *testing.T, mode, encoding, trailer, decoded, body string) {
		r := &http.Request{Method: "PUT", URL: &url.URL{Path: "/b/k"}, Host: "example.com", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
		for k, v := range map[string]string{"X-Amz-Content-Sha256": mode, "Content-Encoding": encoding,
			"X-Amz-Trailer": trailer, "X-Amz-Decoded-Content-Length": decoded} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		rc, err := Dechunk(r)
		if err != nil {
			requireClientError(t, err)
			return
		}
		defer rc.Close()
		n, err := io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
		if err != nil {
			requireClientError(t, err)
		} else if n > r.ContentLength && r.ContentLength >= 0 {
			t.Fatalf("read %d bytes, declared %d", n, r.ContentLength)
		}
	})
}
