package sigv4

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawUnsignedTrailer signs a request whose aws-chunked body is given
// verbatim, with STREAMING-UNSIGNED-PAYLOAD-TRAILER.
func rawUnsignedTrailer(t *testing.T, url, body string, decoded int, trailer string) *http.Request {
	t.Helper()
	req, _ := http.NewRequest("PUT", url, strings.NewReader(body))
	req.Header.Set("Content-Encoding", "aws-chunked")
	if decoded >= 0 {
		req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(decoded))
	}
	if trailer != "" {
		req.Header.Set("X-Amz-Trailer", trailer)
	}
	req.Header.Set("X-Amz-Content-Sha256", StreamingUnsignedTrailer)
	if err := s3Signer().SignHTTP(context.Background(), sdkCreds, req, StreamingUnsignedTrailer, "s3", testRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestChunkedEdges(t *testing.T) {
	data := "hello world"
	good := "b\r\n" + data + "\r\n0\r\nx-amz-checksum-crc32:" + crc32b64([]byte(data)) + "\r\n\r\n"
	cases := []struct {
		name    string
		body    string
		decoded int
		trailer string
		opts    *Options
		status  int
		code    string
	}{
		{"aws-sdk-go-v2 wire format", good, len(data), "x-amz-checksum-crc32", nil, 200, ""},
		{"no trailer declared", "b\r\n" + data + "\r\n0\r\n\r\n", len(data), "", nil, 200, ""},
		{"missing decoded length", good, -1, "x-amz-checksum-crc32", nil, 411, "MissingContentLength"},
		{"decoded length too small", good, 5, "x-amz-checksum-crc32", nil, 400, "IncompleteBody"},
		{"decoded length too large", good, 20, "x-amz-checksum-crc32", nil, 400, "IncompleteBody"},
		{"bad chunk size", "zz\r\n" + data + "\r\n0\r\n\r\n", len(data), "", nil, 400, "IncompleteBody"},
		{"chunk over the limit", good, len(data), "x-amz-checksum-crc32", &Options{MaxChunkSize: 4}, 400, "IncompleteBody"},
		{"header line too long", strings.Repeat("0", 5000) + "b\r\n" + data + "\r\n0\r\n\r\n", len(data), "", nil, 400, "IncompleteBody"},
		{"no CRLF after data", "b\r\n" + data + "XX0\r\n\r\n", len(data), "", nil, 400, "IncompleteBody"},
		{"body ends early", "b\r\n" + data[:5], len(data), "", nil, 400, "IncompleteBody"},
		{"declared trailer missing", "b\r\n" + data + "\r\n0\r\n\r\n", len(data), "x-amz-checksum-crc32", nil, 400, "IncompleteBody"},
		{"undeclared trailer", good, len(data), "x-amz-checksum-sha256", nil, 400, "IncompleteBody"},
		{"unsupported trailer name", good, len(data), "x-amz-checksum-md5", nil, 400, "InvalidRequest"},
		{"wrong crc", strings.Replace(good, crc32b64([]byte(data)), crc32b64([]byte("other")), 1), len(data), "x-amz-checksum-crc32", nil, 400, "BadDigest"},
		{"malformed crc", strings.Replace(good, crc32b64([]byte(data)), "!!!", 1), len(data), "x-amz-checksum-crc32", nil, 400, "InvalidRequest"},
		{"garbage after the end", good + "more", len(data), "x-amz-checksum-crc32", nil, 400, "IncompleteBody"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := testServer(t, c.opts, nil)
			got := do(t, rawUnsignedTrailer(t, srv.URL+"/b/k", c.body, c.decoded, c.trailer))
			want(t, got, c.status, c.code)
			if c.status == 200 && got.BodySHA != sha256hex([]byte(data)) {
				t.Fatalf("decoded body differs")
			}
		})
	}
}

// TestHeaderChecksum: an x-amz-checksum-* header on a PUT is verified
// against the body even with UNSIGNED-PAYLOAD; CompleteMultipartUpload's
// (POST) checksum headers are the handler's business.
func TestHeaderChecksum(t *testing.T) {
	srv := testServer(t, nil, nil)
	body := []byte("checksummed body")
	now := time.Now()
	ok := signedRequest(t, "PUT", srv.URL+"/b/k", body, UnsignedPayload, now, map[string]string{"X-Amz-Checksum-Crc32": crc32b64(body)})
	got := do(t, ok)
	want(t, got, 200, "")
	if got.Checksums["X-Amz-Checksum-Crc32"] != crc32b64(body) {
		t.Fatalf("checksums %v", got.Checksums)
	}
	bad := signedRequest(t, "PUT", srv.URL+"/b/k", body, UnsignedPayload, now, map[string]string{"X-Amz-Checksum-Crc32": crc32b64([]byte("x"))})
	want(t, do(t, bad), 400, "BadDigest")
	two := signedRequest(t, "PUT", srv.URL+"/b/k", body, UnsignedPayload, now, map[string]string{
		"X-Amz-Checksum-Crc32": crc32b64(body), "X-Amz-Checksum-Sha1": "AAAA"})
	want(t, do(t, two), 400, "InvalidRequest")
	post := signedRequest(t, "POST", srv.URL+"/b/k?uploadId=1", body, sha256hex(body), now, map[string]string{"X-Amz-Checksum-Crc32": crc32b64([]byte("whole object"))})
	want(t, do(t, post), 200, "")
	empty := signedRequest(t, "GET", srv.URL+"/b/k", nil, emptySHA256, now, nil)
	got = do(t, empty)
	want(t, got, 200, "")
	if !bytes.Equal([]byte(got.BodySHA), []byte(emptySHA256)) {
		t.Fatalf("empty body sha %s", got.BodySHA)
	}
}

// TestDateHeader: Date cannot stand in for a signed X-Amz-Date.
func TestDateHeader(t *testing.T) {
	srv := testServer(t, nil, nil)
	now := time.Now().UTC().Truncate(time.Second)
	req, _ := http.NewRequest("GET", srv.URL+"/b/k", nil)
	req.Header.Set("X-Amz-Content-Sha256", UnsignedPayload)
	if err := s3Signer().SignHTTP(context.Background(), sdkCreds, req, UnsignedPayload, "s3", testRegion, now); err != nil {
		t.Fatal(err)
	}
	// Move the date from X-Amz-Date to Date; the signature covered
	// x-amz-date, so this must now fail…
	req.Header.Set("Date", now.Format(http.TimeFormat))
	req.Header.Del("X-Amz-Date")
	want(t, do(t, req), 403, "SignatureDoesNotMatch")
}
