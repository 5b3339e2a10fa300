package sigv4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// sha256Hasher adapts crypto/sha256 to the md5simd.Hasher minio-go's signer
// wants.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

func crc32b64(b []byte) string {
	s := crc32.NewIEEE()
	s.Write(b)
	return base64.StdEncoding.EncodeToString(s.Sum(nil))
}

// minioChunked builds an aws-chunked PUT with minio-go's signer: signed
// chunks (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), with a signed trailer when
// trailer is set, or unsigned chunks with a trailer when unsigned is set.
func minioChunked(t *testing.T, url string, body []byte, trailer http.Header, unsigned bool) *http.Request {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	if unsigned {
		req.Header.Set("X-Amz-Content-Sha256", StreamingUnsignedTrailer)
		return signer.SignV4Trailer(*req, testAK, testSecret, "", testRegion, trailer)
	}
	req.Trailer = trailer
	return signer.StreamingSignV4(req, testAK, testSecret, "", testRegion, int64(len(body)), time.Now().UTC(), sha256Hasher{sha256.New()})
}

func TestChunkedMinioSigner(t *testing.T) {
	body := payload(200 << 10) // four 64 KiB chunks and a short one
	for _, c := range []struct {
		name     string
		trailer  http.Header
		unsigned bool
		mode     string
	}{
		{"signed chunks", nil, false, StreamingSigned},
		{"signed chunks and trailer", http.Header{"X-Amz-Checksum-Crc32": {crc32b64(body)}}, false, StreamingSignedTrailer},
		{"unsigned chunks and trailer", http.Header{"X-Amz-Checksum-Crc32": {crc32b64(body)}}, true, StreamingUnsignedTrailer},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := testServer(t, nil, nil)
			got := do(t, minioChunked(t, srv.URL+"/bucket/key", body, c.trailer, c.unsigned))
			want(t, got, 200, "")
			if got.Mode != c.mode {
				t.Fatalf("mode %q, want %q", got.Mode, c.mode)
			}
			if got.BodySHA != sha256hex(body) || got.Length != int64(len(body)) {
				t.Fatalf("decoded body sha %s (ContentLength %d), want %s (%d)", got.BodySHA, got.Length, sha256hex(body), len(body))
			}
			if strings.Contains(got.Encoding, "aws-chunked") {
				t.Fatalf("Content-Encoding still %q", got.Encoding)
			}
			if c.trailer != nil && got.Checksums["X-Amz-Checksum-Crc32"] != crc32b64(body) {
				t.Fatalf("verified checksums %v", got.Checksums)
			}
		})
		t.Run(c.name+"/tampered chunk data", func(t *testing.T) {
			// Byte 100000 is inside the second chunk's data.
			srv := testServer(t, nil, flipBody(100000))
			code, status := "SignatureDoesNotMatch", 403
			if c.unsigned {
				code, status = "BadDigest", 400
			}
			want(t, do(t, minioChunked(t, srv.URL+"/bucket/key", body, c.trailer, c.unsigned)), status, code)
		})
		if c.trailer != nil {
			t.Run(c.name+"/wrong trailer checksum", func(t *testing.T) {
				srv := testServer(t, nil, nil)
				bad := http.Header{"X-Amz-Checksum-Crc32": {crc32b64([]byte("other"))}}
				code, status := "BadDigest", 400
				want(t, do(t, minioChunked(t, srv.URL+"/bucket/key", body, bad, c.unsigned)), status, code)
			})
		}
	}
	t.Run("truncated body", func(t *testing.T) {
		srv := testServer(t, nil, func(r *http.Request) {
			r.Body = io.NopCloser(io.LimitReader(r.Body, 100000))
		})
		want(t, do(t, minioChunked(t, srv.URL+"/bucket/key", body, nil, false)), 400, "IncompleteBody")
	})
	t.Run("decoded length lies", func(t *testing.T) {
		srv := testServer(t, nil, nil)
		req := minioChunked(t, srv.URL+"/bucket/key", body, nil, true)
		req.Header.Set("X-Amz-Decoded-Content-Length", "10") // signed header: also breaks the seed signature
		got := do(t, req)
		if got.Status == 200 {
			t.Fatalf("accepted a body longer than its declared decoded length")
		}
	})
}

// TestChunkedRealSDK uploads with the real aws-sdk-go-v2 S3 client and its
// default checksum settings, through net/http, and checks what Verify
// decoded. Each algorithm the SDK offers is tried, and a tampered body must
// fail the trailing checksum.
func TestChunkedRealSDK(t *testing.T) {
	t.Run("http", func(t *testing.T) { testRealSDK(t, false) })
	t.Run("https", func(t *testing.T) { testRealSDK(t, true) })
}

func testRealSDK(t *testing.T, tls bool) {
	body := payload(300 << 10)
	for _, alg := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c,
		types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmCrc64nvme} {
		name := string(alg)
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			srv, seen := recordingServer(t, nil, nil, tls)
			client := sdkClient(srv)
			_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("bucket"), Key: aws.String("dir/key with space"),
				Body: bytes.NewReader(body), ChecksumAlgorithm: alg,
			})
			if err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			outs := seen()
			if len(outs) != 1 {
				t.Fatalf("%d requests", len(outs))
			}
			got := outs[0]
			want(t, got, 200, "")
			if !bytes.Equal(got.Body, body) {
				t.Fatalf("decoded %d bytes, want %d", len(got.Body), len(body))
			}
			t.Logf("mode %s, checksums %v", got.Mode, got.Checksums)
			if tls && got.Mode != StreamingUnsignedTrailer {
				t.Fatalf("over https the SDK sent mode %s, want %s", got.Mode, StreamingUnsignedTrailer)
			}
			if len(got.Checksums) != 1 {
				t.Fatalf("the SDK's checksum was not verified: mode %s, checksums %v", got.Mode, got.Checksums)
			}
		})
		t.Run(name+"/tampered", func(t *testing.T) {
			srv, seen := recordingServer(t, nil, flipBody(200000), tls)
			client := sdkClient(srv)
			_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("bucket"), Key: aws.String("k"),
				Body: bytes.NewReader(body), ChecksumAlgorithm: alg,
			})
			if err == nil {
				t.Fatalf("PutObject of a tampered body succeeded")
			}
			for _, o := range seen() {
				if o.Status == 200 {
					t.Fatalf("server accepted a tampered body (mode %s)", o.Mode)
				}
				if o.Code != "BadDigest" && o.Code != "XAmzContentSHA256Mismatch" {
					t.Fatalf("code %s", o.Code)
				}
			}
		})
	}
}

// sdkClient is an S3 client with the checksum defaults
// config.LoadDefaultConfig gives (WhenSupported: CRC32 on every PutObject).
func sdkClient(srv *httptest.Server) *s3.Client {
	return s3.New(s3.Options{
		Region:                     testRegion,
		BaseEndpoint:               aws.String(srv.URL),
		HTTPClient:                 srv.Client(),
		UsePathStyle:               true,
		Credentials:                aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return sdkCreds, nil }),
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	})
}

// TestChunkedHeaderChecksum: an x-amz-checksum-* header on an aws-chunked
// PUT (signed chunks carry no trailer) describes the decoded body and is
// verified at its end, as on a plain body.
func TestChunkedHeaderChecksum(t *testing.T) {
	body := payload(100 << 10)
	for _, c := range []struct {
		name   string
		sum    string
		status int
		code   string
	}{
		{"right", crc32b64(body), 200, ""},
		{"wrong", crc32b64([]byte("other")), 400, "BadDigest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := testServer(t, nil, nil)
			req, err := http.NewRequest("PUT", srv.URL+"/bucket/key", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = int64(len(body))
			req.Header.Set("X-Amz-Checksum-Crc32", c.sum)
			req = signer.StreamingSignV4(req, testAK, testSecret, "", testRegion, int64(len(body)), time.Now().UTC(), sha256Hasher{sha256.New()})
			got := do(t, req)
			want(t, got, c.status, c.code)
			if got.Mode != StreamingSigned {
				t.Fatalf("mode %q", got.Mode)
			}
			if c.status == 200 && got.Checksums["X-Amz-Checksum-Crc32"] != c.sum {
				t.Fatalf("verified checksums %v", got.Checksums)
			}
		})
	}
}
