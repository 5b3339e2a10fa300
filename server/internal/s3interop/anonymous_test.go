package s3interop

import (
	"bytes"
	"context"
	"crypto/md5"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/server/servertest"
)

// sentRequest is what a client put on the wire, as far as these tests care.
type sentRequest struct {
	method, path                          string
	auth, mode, encoding, trailer, length string
}

// recorder is an http.RoundTripper that notes every request it passes on.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []sentRequest
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.sent = append(r.sent, sentRequest{method: req.Method, path: req.URL.Path,
		auth: req.Header.Get("Authorization"), mode: req.Header.Get("X-Amz-Content-Sha256"),
		encoding: req.Header.Get("Content-Encoding"), trailer: req.Header.Get("X-Amz-Trailer"),
		length: req.Header.Get("X-Amz-Decoded-Content-Length")})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// last returns the last request with the given method whose path ends in
// suffix.
func (r *recorder) last(t *testing.T, method, suffix string) sentRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.sent) - 1; i >= 0; i-- {
		if s := r.sent[i]; s.method == method && strings.HasSuffix(s.path, suffix) {
			return s
		}
	}
	t.Fatalf("no %s …%s was sent", method, suffix)
	return sentRequest{}
}

// wantUnsignedTrailer fails unless s is an unsigned aws-chunked request
// with a trailing checksum: the mode this file is about.
func wantUnsignedTrailer(t *testing.T, what string, s sentRequest) {
	t.Helper()
	if s.auth != "" || s.mode != "STREAMING-UNSIGNED-PAYLOAD-TRAILER" || !strings.Contains(s.encoding, "aws-chunked") ||
		!strings.HasPrefix(s.trailer, "x-amz-checksum-") {
		t.Fatalf("%s was not an unsigned aws-chunked request with a trailer: %+v", what, s)
	}
}

// TestAnonymousSDKTrailer: aws-sdk-go-v2 with anonymous credentials over
// https sends unsigned aws-chunked bodies with a trailing CRC32; a
// --anonymous server de-chunks them (PutObject, a streamed body, UploadPart)
// and stores the decoded bytes.
func TestAnonymousSDKTrailer(t *testing.T) {
	srv, hc, _ := tlsServerWith(t, server.Config{Anonymous: true})
	rec := &recorder{next: hc.Transport}
	ctx := context.Background()
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	if err != nil {
		t.Fatal(err)
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.UsePathStyle = true
		o.HTTPClient = &http.Client{Transport: rec}
	})
	bucket := testutil.RandomName("anon-")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("anonymous CreateBucket: %v", err)
	}
	data := bytes.Repeat([]byte("anonymous trailer "), 4000) // 72 KB: stored as a blob, not inline
	get := func(key string) []byte {
		t.Helper()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatalf("GetObject %s: %v", key, err)
		}
		defer out.Body.Close()
		b, _ := io.ReadAll(out.Body)
		return b
	}

	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("obj"), Body: bytes.NewReader(data), IfNoneMatch: aws.String("*")})
	if err != nil {
		t.Fatalf("anonymous PutObject over https: %v", err)
	}
	wantUnsignedTrailer(t, "PutObject", rec.last(t, "PUT", "/obj"))
	if sum := md5.Sum(data); aws.ToString(put.ETag) != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("ETag %s is not the MD5 of the decoded body", aws.ToString(put.ETag))
	}
	if got := get("obj"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(data))
	}
	// Conditions still apply to a de-chunked body.
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("obj"), Body: bytes.NewReader(data), IfNoneMatch: aws.String("*")})
	wantStatus(t, "second If-None-Match: * PutObject", err, 412, "PreconditionFailed")

	// Another checksum algorithm and a non-seekable body.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("pipe"), ContentLength: aws.Int64(int64(len(data))),
		Body: io.MultiReader(bytes.NewReader(data[:10]), bytes.NewReader(data[10:])), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c}); err != nil {
		t.Fatalf("anonymous streamed PutObject: %v", err)
	}
	wantUnsignedTrailer(t, "streamed PutObject", rec.last(t, "PUT", "/pipe"))
	if got := get("pipe"); !bytes.Equal(got, data) {
		t.Fatalf("streamed: read back %d bytes", len(got))
	}

	id, part := uploadCRC32Part(t, c, bucket, "mpu", data)
	wantUnsignedTrailer(t, "UploadPart", rec.last(t, "PUT", "/mpu"))
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: aws.String("mpu"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{part}}}); err != nil {
		t.Fatalf("anonymous CompleteMultipartUpload: %v", err)
	}
	if got := get("mpu"); !bytes.Equal(got, data) {
		t.Fatalf("multipart: read back %d bytes", len(got))
	}
}

// rawPut sends an unsigned PUT with an aws-chunked body, as a client with
// anonymous credentials does, and returns the status and S3 error code.
func rawPut(t *testing.T, url string, body []byte, decoded int) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Content-Sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(decoded))
	req.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
	return sendForCode(t, req)
}

func rawGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestAnonymousRawChunked: a hand-built unsigned aws-chunked PUT to a
// --anonymous server is stored decoded when its trailing CRC32 is right;
// with a wrong one it is 400 BadDigest (as AWS answers) and nothing is
// stored: no new object, the old version kept, no blob left behind.
func TestAnonymousRawChunked(t *testing.T) {
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{Anonymous: true}})
	bucket := srv.URL + "/" + testutil.RandomName("raw-")
	req, _ := http.NewRequest("PUT", bucket, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("create bucket: %d", resp.StatusCode)
	}
	for _, size := range []int{100, 100 << 10} { // inline and blob-backed
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
		good := chunkedBody(data, 64<<10, crc32Base64(data))
		bad := chunkedBody(data, 64<<10, crc32Base64(append([]byte("x"), data...)))
		key := fmt.Sprintf("%s/k%d", bucket, size)

		if st, code := rawPut(t, key+"-new", bad, len(data)); st != 400 || code != "BadDigest" {
			t.Fatalf("%d bytes, wrong crc32, new key: %d %q, want 400 BadDigest", size, st, code)
		}
		if st, _ := rawGet(t, key+"-new"); st != 404 {
			t.Fatalf("%d bytes: a body with a wrong crc32 was stored (GET %d)", size, st)
		}

		if st, code := rawPut(t, key, good, len(data)); st != 200 {
			t.Fatalf("%d bytes, right crc32: %d %q", size, st, code)
		}
		if st, got := rawGet(t, key); st != 200 || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: GET %d, %d bytes back (framing stored?)", size, st, len(got))
		}
		blobs := len(enginetest.Blobs(t, srv.Engine()))
		changed := bytes.Repeat([]byte("Z"), len(data))
		if st, code := rawPut(t, key, chunkedBody(changed, 64<<10, crc32Base64(data)), len(data)); st != 400 || code != "BadDigest" {
			t.Fatalf("%d bytes, wrong crc32 over an object: %d %q", size, st, code)
		}
		if st, got := rawGet(t, key); st != 200 || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: the object changed after a BadDigest overwrite (GET %d)", size, st)
		}
		if n := len(enginetest.Blobs(t, srv.Engine())); n != blobs {
			t.Fatalf("%d bytes: %d blob files after a refused overwrite, %d before", size, n, blobs)
		}
	}
	// A declared length that disagrees with the chunks stores nothing.
	data := []byte("short body")
	if st, code := rawPut(t, bucket+"/len", chunkedBody(data, 4, crc32Base64(data)), len(data)+1); st != 400 || code != "IncompleteBody" {
		t.Fatalf("wrong decoded length: %d %q", st, code)
	}
	if st, _ := rawGet(t, bucket+"/len"); st != 404 {
		t.Fatalf("wrong decoded length: stored (GET %d)", st)
	}
}

//go:embed testdata/boto3_anonymous.py
var boto3AnonymousScript []byte

// TestBoto3Anonymous: boto3 with botocore.UNSIGNED over https sends
// unsigned aws-chunked bodies (inside HTTP chunked transfer encoding) with a
// trailing checksum; a --anonymous server de-chunks them
// (testdata/boto3_anonymous.py).
func TestBoto3Anonymous(t *testing.T) {
	py := boto3Python(t)
	srv, _, cert := tlsServerWith(t, server.Config{Anonymous: true})
	runCheckScript(t, py, "boto3_anonymous.py", boto3AnonymousScript, 3, srv.URL, cert)
}
