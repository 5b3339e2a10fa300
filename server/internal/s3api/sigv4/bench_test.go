package sigv4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// BenchmarkVerifyHeader: one header-signed request with an empty body.
func BenchmarkVerifyHeader(b *testing.B) {
	v := New(Credentials{testAK: testSecret}.Lookup, nil)
	req := httptest.NewRequest("GET", "http://127.0.0.1:8500/bucket/some/key?versionId=3", nil)
	req.Header.Set("X-Amz-Content-Sha256", UnsignedPayload)
	if err := s3Signer().SignHTTP(context.Background(), sdkCreds, req, UnsignedPayload, "s3", testRegion, time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, body, err := v.Verify(req); err != nil {
			b.Fatal(err)
		} else {
			body.Close()
		}
	}
}

// BenchmarkVerifySignedChunks: decode and verify a 4 MiB signed aws-chunked
// body (64 KiB chunks, as minio-go sends them).
func BenchmarkVerifySignedChunks(b *testing.B) {
	v := New(Credentials{testAK: testSecret}.Lookup, nil)
	data := payload(4 << 20)
	req, _ := http.NewRequest("PUT", "http://127.0.0.1:8500/bucket/key", bytes.NewReader(data))
	req.ContentLength = int64(len(data))
	req = signer.StreamingSignV4(req, testAK, testSecret, "", testRegion, int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	wire, err := io.ReadAll(req.Body)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := req.Clone(context.Background())
		r.Body = io.NopCloser(bytes.NewReader(wire))
		r.ContentLength = int64(len(wire))
		_, body, err := v.Verify(r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDechunk: decode a 4 MiB unsigned aws-chunked body with a
// trailing CRC32 (64 KiB chunks), as an anonymous SDK client sends it.
func BenchmarkDechunk(b *testing.B) {
	data := payload(4 << 20)
	var wire bytes.Buffer
	for off := 0; off < len(data); off += 64 << 10 {
		wire.WriteString(strconv.FormatInt(64<<10, 16) + "\r\n")
		wire.Write(data[off : off+64<<10])
		wire.WriteString("\r\n")
	}
	wire.WriteString("0\r\nx-amz-checksum-crc32:" + crc32b64(data) + "\r\n\r\n")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := unsignedChunked("", len(data))
		r.Body = io.NopCloser(bytes.NewReader(wire.Bytes()))
		body, err := Dechunk(r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			b.Fatal(err)
		}
	}
}
