package s3interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
)

// chunkedBody frames data as an unsigned aws-chunked body in chunks of
// size bytes, with an x-amz-checksum-crc32 trailer of value sum.
func chunkedBody(data []byte, size int, sum string) []byte {
	var b bytes.Buffer
	for off := 0; off < len(data); off += size {
		n := min(size, len(data)-off)
		fmt.Fprintf(&b, "%x\r\n", n)
		b.Write(data[off : off+n])
		b.WriteString("\r\n")
	}
	b.WriteString("0\r\nx-amz-checksum-crc32:" + sum + "\r\n\r\n")
	return b.Bytes()
}

func crc32Base64(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
}

// signedPut sends a header-signed PUT whose x-amz-content-sha256 is mode
// (hdr are extra header pairs) and returns the status and S3 error code.
func signedPut(t *testing.T, srv *servertest.Server, path string, body []byte, mode string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req.Header.Set("X-Amz-Content-Sha256", mode)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey},
		req, mode, "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	return sendForCode(t, req)
}

// TestBodyVerdictBeforeStore: the verifier reports a bad body instead of
// io.EOF, after the declared bytes, so the handler must read past them.
// Signed requests whose trailing CRC32 or x-amz-content-sha256 is wrong
// are refused, whatever the size (inline, blob-backed, empty), and nothing
// is stored.
func TestBodyVerdictBeforeStore(t *testing.T) {
	srv := servertest.Start(t, nil)
	c := sdkClient(t, srv, srv.AccessKey, srv.SecretKey)
	bucket := testutil.RandomName("verdict-")
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	zeros := strings.Repeat("0", 64)
	for _, size := range []int{0, 10, 100 << 10} {
		data := bytes.Repeat([]byte("v"), size)
		path := fmt.Sprintf("/%s/k%d", bucket, size)
		st, code := signedPut(t, srv, path, chunkedBody(data, 64<<10, crc32Base64([]byte("other"))), "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			"Content-Encoding", "aws-chunked", "X-Amz-Decoded-Content-Length", strconv.Itoa(size), "X-Amz-Trailer", "x-amz-checksum-crc32")
		if st != 400 || code != "BadDigest" {
			t.Fatalf("%d bytes, signed, wrong trailing crc32: %d %q, want 400 BadDigest", size, st, code)
		}
		if size > 0 {
			if st, code := signedPut(t, srv, path, data, zeros); st != 400 || code != "XAmzContentSHA256Mismatch" {
				t.Fatalf("%d bytes, wrong x-amz-content-sha256: %d %q", size, st, code)
			}
		}
		if st, code := signedPut(t, srv, path, data, "UNSIGNED-PAYLOAD", "X-Amz-Checksum-Crc32", crc32Base64([]byte("other"))); st != 400 || code != "BadDigest" {
			t.Fatalf("%d bytes, wrong x-amz-checksum-crc32 header: %d %q", size, st, code)
		}
		_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String(fmt.Sprintf("k%d", size))})
		wantStatus(t, fmt.Sprintf("%d bytes: HEAD after refused PUTs", size), err, 404, "")
	}
}
