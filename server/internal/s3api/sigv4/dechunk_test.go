package sigv4

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// unsignedChunked builds an unsigned request with an aws-chunked body given
// verbatim; hdr are header name/value pairs added after the defaults
// (an empty value deletes the header).
func unsignedChunked(body string, decoded int, hdr ...string) *http.Request {
	r := httptest.NewRequest("PUT", "/b/k", strings.NewReader(body))
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Content-Sha256", StreamingUnsignedTrailer)
	r.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(decoded))
	r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			r.Header.Del(hdr[i])
		} else {
			r.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return r
}

// readDechunked runs Dechunk and reads the whole body; it returns what was
// read and the S3 error code of the first failure ("" for none).
func readDechunked(t *testing.T, r *http.Request) ([]byte, string) {
	t.Helper()
	body, err := Dechunk(r)
	if err == nil {
		defer body.Close()
		var got []byte
		got, err = io.ReadAll(body)
		if err == nil {
			return got, ""
		}
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	return nil, se.Code
}

func TestDechunk(t *testing.T) {
	data := "hello world"
	sum := crc32b64([]byte(data))
	good := "b\r\n" + data + "\r\n0\r\nx-amz-checksum-crc32:" + sum + "\r\n\r\n"
	wrong := strings.Replace(good, sum, crc32b64([]byte("other")), 1)
	cases := []struct {
		name    string
		body    string
		decoded int
		hdr     []string
		code    string
	}{
		{"aws-sdk-go-v2 wire format", good, len(data), nil, ""},
		{"no x-amz-content-sha256", good, len(data), []string{"X-Amz-Content-Sha256", ""}, ""},
		{"mode header without Content-Encoding", good, len(data), []string{"Content-Encoding", ""}, ""},
		{"aws-chunked among other encodings", good, len(data), []string{"Content-Encoding", "gzip, aws-chunked"}, ""},
		{"no trailer declared", "b\r\n" + data + "\r\n0\r\n\r\n", len(data), []string{"X-Amz-Trailer", ""}, ""},
		{"two chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:" + sum + "\r\n\r\n", len(data), nil, ""},
		{"chunk signatures ignored", "b;chunk-signature=x\r\n" + data + "\r\n0\r\nx-amz-checksum-crc32:" + sum + "\r\n\r\n", len(data), nil, ""},
		{"wrong trailing crc32", wrong, len(data), nil, "BadDigest"},
		{"malformed trailing crc32", strings.Replace(good, sum, "!!", 1), len(data), nil, "InvalidRequest"},
		{"declared trailer not sent", "b\r\n" + data + "\r\n0\r\n\r\n", len(data), nil, "IncompleteBody"},
		{"unsupported trailer", good, len(data), []string{"X-Amz-Trailer", "x-amz-checksum-md5"}, "InvalidRequest"},
		{"no decoded length", good, 0, []string{"X-Amz-Decoded-Content-Length", ""}, "MissingContentLength"},
		{"decoded length too small", good, 5, nil, "IncompleteBody"},
		{"decoded length too large", good, 20, nil, "IncompleteBody"},
		{"body ends inside a chunk", "b\r\nhello", len(data), nil, "IncompleteBody"},
		{"chunk over the 64 MiB limit", strconv.FormatInt(DefaultMaxChunkSize+1, 16) + "\r\n" + data, DefaultMaxChunkSize + 1, nil, "IncompleteBody"},
		{"garbage after the end", good + "more", len(data), nil, "IncompleteBody"},
		{"signed chunks on an unsigned request", good, len(data), []string{"X-Amz-Content-Sha256", StreamingSigned}, "InvalidRequest"},
		{"signed trailer on an unsigned request", good, len(data), []string{"X-Amz-Content-Sha256", StreamingSignedTrailer}, "InvalidRequest"},
		{"aws-chunked with UNSIGNED-PAYLOAD", good, len(data), []string{"X-Amz-Content-Sha256", UnsignedPayload}, "InvalidRequest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := unsignedChunked(c.body, c.decoded, c.hdr...)
			got, code := readDechunked(t, r)
			if code != c.code {
				t.Fatalf("code %q, want %q", code, c.code)
			}
			if c.code != "" {
				return
			}
			if string(got) != data {
				t.Fatalf("decoded %q, want %q", got, data)
			}
			if r.ContentLength != int64(len(data)) {
				t.Fatalf("ContentLength %d, want the decoded %d", r.ContentLength, len(data))
			}
			if strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
				t.Fatalf("Content-Encoding still %q", r.Header.Get("Content-Encoding"))
			}
		})
	}
}

// TestDechunkChecksums: the verified trailer is reported through Body once
// the body is read, and the failure comes before io.EOF, never after.
func TestDechunkChecksums(t *testing.T) {
	data := payload(100 << 10)
	sum := crc32b64(data)
	var b bytes.Buffer
	for off := 0; off < len(data); off += 64 << 10 {
		n := min(64<<10, len(data)-off)
		b.WriteString(strconv.FormatInt(int64(n), 16) + "\r\n")
		b.Write(data[off : off+n])
		b.WriteString("\r\n")
	}
	b.WriteString("0\r\nx-amz-checksum-crc32:" + sum + "\r\n\r\n")
	body, err := Dechunk(unsignedChunked(b.String(), len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if got := body.(Body).Checksums(); len(got) != 0 {
		t.Fatalf("checksums before EOF: %v", got)
	}
	got, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if c := body.(Body).Checksums().Get("x-amz-checksum-crc32"); c != sum {
		t.Fatalf("verified crc32 %q, want %q", c, sum)
	}

	// A wrong trailer: every byte is delivered, then BadDigest instead of EOF.
	bad := strings.Replace(b.String(), sum, crc32b64([]byte("x")), 1)
	body, err = Dechunk(unsignedChunked(bad, len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(body)
	if !errors.Is(err, ErrBadDigest) || len(got) != len(data) {
		t.Fatalf("read %d bytes, err %v; want all %d then BadDigest", len(got), err, len(data))
	}
	if c := body.(Body).Checksums(); len(c) != 0 {
		t.Fatalf("checksums after a failure: %v", c)
	}
}

// TestDechunkPlainBody: a body that is not aws-chunked passes through
// untouched, even with an x-amz-decoded-content-length header.
func TestDechunkPlainBody(t *testing.T) {
	r := httptest.NewRequest("PUT", "/b/k", strings.NewReader("0123456789"))
	r.Header.Set("X-Amz-Decoded-Content-Length", "5")
	got, code := readDechunked(t, r)
	if code != "" || string(got) != "0123456789" || r.ContentLength != 10 {
		t.Fatalf("plain body: %q %q ContentLength %d", got, code, r.ContentLength)
	}
}

// TestDechunkChunkLimit: a chunk declared above DefaultMaxChunkSize is
// refused from its header, before any of its data is read.
func TestDechunkChunkLimit(t *testing.T) {
	r := unsignedChunked(strconv.FormatInt(DefaultMaxChunkSize+1, 16)+"\r\nxyz", DefaultMaxChunkSize+1)
	body, err := Dechunk(r)
	if err != nil {
		t.Fatal(err)
	}
	n, err := body.Read(make([]byte, 10))
	var se *Error
	if n != 0 || !errors.As(err, &se) || se.Code != "IncompleteBody" || !strings.Contains(se.Message, "exceeds the limit") {
		t.Fatalf("read %d, %v; want the chunk-size limit", n, err)
	}
}
