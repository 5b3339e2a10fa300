package s3api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
)

func testMasterKey(t testing.TB, fill byte) *ssecrypt.Keyring {
	t.Helper()
	k, err := ssecrypt.New(bytes.Repeat([]byte{fill}, ssecrypt.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// pattern is a distinctive plaintext of n bytes: its every 32-byte window
// names the tag, so a fragment of it anywhere on disk is found.
func pattern(tag string, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "<%s:%08d>", tag, i)
	}
	return b.Bytes()[:n]
}

// sseSDK is an aws-sdk-go-v2 client of a handler with a master key, over
// TLS (so the SDK streams aws-chunked bodies with trailing checksums).
func sseSDK(t *testing.T, dir string, key *ssecrypt.Keyring) (*s3.Client, *engine.Engine) {
	t.Helper()
	const ak, sk = "AKIDSSE", "sse-secret"
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(MustNew(e, &Options{Auth: sigv4.New(sigv4.Credentials{ak: sk}.Lookup, nil), MinPartSize: 5, SSE: key}))
	t.Cleanup(func() { srv.Close(); e.Close() })
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), HTTPClient: srv.Client(), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, nil
		}),
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	})
	return c, e
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestSSES3SDK: with aws-sdk-go-v2, objects written with
// ServerSideEncryption AES256 (single PUT inline and in a blob, multipart,
// copy) read back whole, by range and by partNumber, with the header
// echoed on PUT, HEAD, GET, Copy, CreateMultipartUpload, UploadPart and
// Complete; ETags stay the MD5 of the plaintext, checksums verify the
// plaintext, conditional writes still decide. Before SSE was implemented
// every one of these writes was refused 501 NotImplemented.
func TestSSES3SDK(t *testing.T) {
	c, _ := sseSDK(t, t.TempDir(), testMasterKey(t, 1))
	ctx := context.Background()
	b := aws.String("sse")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	aes := types.ServerSideEncryptionAes256
	get := func(key string, in *s3.GetObjectInput) ([]byte, *s3.GetObjectOutput) {
		t.Helper()
		in.Bucket, in.Key = b, aws.String(key)
		out, err := c.GetObject(ctx, in)
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		defer out.Body.Close()
		data, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatalf("GET %s body: %v", key, err)
		}
		if out.ServerSideEncryption != aes {
			t.Fatalf("GET %s: ServerSideEncryption %q", key, out.ServerSideEncryption)
		}
		return data, out
	}
	for _, size := range []int{0, 100, inlineMax + 1, 3*ssecrypt.ChunkSize + 7} {
		key := fmt.Sprintf("single-%d", size)
		body := pattern(key, size)
		sha := sha256.Sum256(body)
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: bytes.NewReader(body),
			ServerSideEncryption: aes, ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
		if err != nil {
			t.Fatalf("PUT %s: %v", key, err)
		}
		if put.ServerSideEncryption != aes || *put.ETag != md5ETag(string(body)) {
			t.Fatalf("PUT %s: sse %q etag %s", key, put.ServerSideEncryption, *put.ETag)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String(key)})
		if err != nil || head.ServerSideEncryption != aes || *head.ContentLength != int64(size) {
			t.Fatalf("HEAD %s: %v %+v", key, err, head)
		}
		got, out := get(key, &s3.GetObjectInput{ChecksumMode: types.ChecksumModeEnabled})
		if !bytes.Equal(got, body) || *out.ETag != *put.ETag {
			t.Fatalf("GET %s: %d bytes, etag %s", key, len(got), *out.ETag)
		}
		if out.ChecksumSHA256 == nil || *out.ChecksumSHA256 != base64.StdEncoding.EncodeToString(sha[:]) {
			t.Fatalf("GET %s: checksum %v", key, out.ChecksumSHA256)
		}
		if size < 10 {
			continue
		}
		for _, rg := range [][2]int{{0, 0}, {1, size / 2}, {size - 3, size - 1}, {ssecrypt.ChunkSize - 2, ssecrypt.ChunkSize + 2}} {
			if rg[1] >= size {
				continue
			}
			got, _ := get(key, &s3.GetObjectInput{Range: aws.String(fmt.Sprintf("bytes=%d-%d", rg[0], rg[1]))})
			if !bytes.Equal(got, body[rg[0]:rg[1]+1]) {
				t.Fatalf("GET %s range %v: wrong bytes", key, rg)
			}
		}
	}

	// Conditional writes decide on the plaintext's ETag.
	one := pattern("single-100", 100)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("single-100"), Body: bytes.NewReader(one),
		ServerSideEncryption: aes, IfNoneMatch: aws.String("*")})
	if apiCode(err) != "PreconditionFailed" {
		t.Fatalf("If-None-Match * over an SSE object: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("single-100"), Body: bytes.NewReader(one),
		ServerSideEncryption: aes, IfMatch: aws.String(md5ETag(string(one)))}); err != nil {
		t.Fatalf("If-Match the plaintext's ETag: %v", err)
	}

	// Multipart: parts are sealed as they arrive; partNumber reads one.
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp"), ServerSideEncryption: aes})
	if err != nil || mp.ServerSideEncryption != aes {
		t.Fatalf("CreateMultipartUpload: %v %q", err, mp.ServerSideEncryption)
	}
	parts := [][]byte{pattern("part1", ssecrypt.ChunkSize+11), pattern("part2", 5000), pattern("part3", 33)}
	var done []types.CompletedPart
	for i, p := range parts {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil || up.ServerSideEncryption != aes || *up.ETag != md5ETag(string(p)) {
			t.Fatalf("UploadPart %d: %v %q", i+1, err, up.ServerSideEncryption)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag})
	}
	// UploadPartCopy from an SSE object into the SSE upload.
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId,
		PartNumber: aws.Int32(4), CopySource: aws.String("sse/single-100"), CopySourceRange: aws.String("bytes=10-19")})
	if err != nil || pc.ServerSideEncryption != aes {
		t.Fatalf("UploadPartCopy: %v %+v", err, pc)
	}
	parts = append(parts, one[10:20])
	done = append(done, types.CompletedPart{PartNumber: aws.Int32(4), ETag: pc.CopyPartResult.ETag})
	cmp, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil || cmp.ServerSideEncryption != aes {
		t.Fatalf("Complete: %v %+v", err, cmp)
	}
	whole := bytes.Join(parts, nil)
	if got, _ := get("mp", &s3.GetObjectInput{}); !bytes.Equal(got, whole) {
		t.Fatal("multipart GET: wrong bytes")
	}
	for i, p := range parts {
		got, out := get("mp", &s3.GetObjectInput{PartNumber: aws.Int32(int32(i + 1))})
		if !bytes.Equal(got, p) || *out.PartsCount != 4 {
			t.Fatalf("partNumber %d: %d bytes, want %d", i+1, len(got), len(p))
		}
	}
	off := len(parts[0]) - 5
	if got, _ := get("mp", &s3.GetObjectInput{Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+5009))}); !bytes.Equal(got, whole[off:off+5010]) {
		t.Fatal("multipart range across parts: wrong bytes")
	}

	// Copy: the destination's encryption is the request's, not the source's.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("sse/mp"), ServerSideEncryption: aes})
	if err != nil || cp.ServerSideEncryption != aes || *cp.CopyObjectResult.ETag != md5ETag(string(whole)) {
		t.Fatalf("CopyObject: %v %+v", err, cp)
	}
	if got, _ := get("copy", &s3.GetObjectInput{}); !bytes.Equal(got, whole) {
		t.Fatal("copy GET: wrong bytes")
	}
	plain, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("plain"), CopySource: aws.String("sse/single-100")})
	if err != nil || plain.ServerSideEncryption != "" {
		t.Fatalf("CopyObject without SSE: %v %q", err, plain.ServerSideEncryption)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("plain")})
	if err != nil || out.ServerSideEncryption != "" {
		t.Fatalf("GET of a plain copy: %v %q", err, out.ServerSideEncryption)
	}
	if got, _ := io.ReadAll(out.Body); !bytes.Equal(got, one) {
		t.Fatal("plain copy: wrong bytes")
	}
	// In place: allowed once it (re)encrypts, as on S3.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("plain"), CopySource: aws.String("sse/plain"), ServerSideEncryption: aes}); err != nil {
		t.Fatalf("in-place encrypting copy: %v", err)
	}
	if got, _ := get("plain", &s3.GetObjectInput{}); !bytes.Equal(got, one) {
		t.Fatal("in-place copy: wrong bytes")
	}
}

// TestSSEBucketDefault: PutBucketEncryption AES256 seals every new object
// written without the header; GetBucketEncryption answers it;
// DeleteBucketEncryption removes it, after which GetBucketEncryption is
// 404 ServerSideEncryptionConfigurationNotFoundError and new objects are
// stored as sent. Before, ?encryption was 501.
func TestSSEBucketDefault(t *testing.T) {
	c, _ := sseSDK(t, t.TempDir(), testMasterKey(t, 1))
	ctx := context.Background()
	b := aws.String("dflt")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b})
	if apiCode(err) != "ServerSideEncryptionConfigurationNotFoundError" {
		t.Fatalf("GetBucketEncryption before: %v", err)
	}
	aes := types.ServerSideEncryptionAes256
	_, err = c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: b, ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: aes}}}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b})
	if err != nil || len(cfg.ServerSideEncryptionConfiguration.Rules) != 1 ||
		cfg.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm != aes {
		t.Fatalf("GetBucketEncryption: %v %+v", err, cfg)
	}
	for _, key := range []string{"small", "big"} {
		body := pattern(key, map[string]int{"small": 10, "big": 100 << 10}[key])
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: bytes.NewReader(body)})
		if err != nil || put.ServerSideEncryption != aes {
			t.Fatalf("PUT %s under the default: %v %q", key, err, put.ServerSideEncryption)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(key)})
		if err != nil || out.ServerSideEncryption != aes {
			t.Fatalf("GET %s: %v", key, err)
		}
		if got, _ := io.ReadAll(out.Body); !bytes.Equal(got, body) {
			t.Fatalf("GET %s: wrong bytes", key)
		}
	}
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp")})
	if err != nil || mp.ServerSideEncryption != aes {
		t.Fatalf("CreateMultipartUpload under the default: %v %q", err, mp.ServerSideEncryption)
	}
	if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b})
	if apiCode(err) != "ServerSideEncryptionConfigurationNotFoundError" {
		t.Fatalf("GetBucketEncryption after delete: %v", err)
	}
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("after"), Body: strings.NewReader("x")})
	if err != nil || put.ServerSideEncryption != "" {
		t.Fatalf("PUT after DeleteBucketEncryption: %v %q", err, put.ServerSideEncryption)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("small")})
	if err != nil || head.ServerSideEncryption != aes {
		t.Fatalf("an object sealed before the delete: %v %q", err, head.ServerSideEncryption)
	}
	_, err = c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: b, ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAwsKms}}}}})
	if apiCode(err) != "KMS.NotFoundException" {
		t.Fatalf("PutBucketEncryption aws:kms: %v", err)
	}
}

// findInTree reports the files under dir that contain needle.
func findInTree(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestSSEAtRestNoPlaintext writes objects with a distinctive plaintext
// (inline, blob, multipart, copy, and versions of a versioned bucket),
// then walks every file of the data directory (database, WAL, blobs,
// checkpoints), open and after a clean close, and finds the plaintext
// nowhere; a control object written without SSE is found, so the walk
// sees the data.
func TestSSEAtRestNoPlaintext(t *testing.T) {
	dir := t.TempDir()
	c, e := sseSDK(t, dir, testMasterKey(t, 1))
	ctx := context.Background()
	aes := types.ServerSideEncryptionAes256
	for _, b := range []string{"rest", "restv"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("restv"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	secret := func(n int) []byte { return pattern("SECRET-PLAINTEXT", n) }
	for i, size := range []int{40, inlineMax, inlineMax + 1, 200 << 10} {
		for _, b := range []string{"rest", "restv", "restv"} {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprint("k", i)),
				Body: bytes.NewReader(secret(size)), ServerSideEncryption: aes}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("rest"), Key: aws.String("mp"), ServerSideEncryption: aes})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("rest"), Key: aws.String("mp"), UploadId: mp.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(secret(1000))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("rest"), Key: aws.String("mp"), UploadId: mp.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	// A part of an upload still in progress, sealed too.
	mp2, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("rest"), Key: aws.String("mp2"), ServerSideEncryption: aes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("rest"), Key: aws.String("mp2"), UploadId: mp2.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(secret(3000))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("rest"), Key: aws.String("copy"), CopySource: aws.String("rest/k3"), ServerSideEncryption: aes}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rest"), Key: aws.String("control"),
		Body: bytes.NewReader(pattern("CONTROL-PLAINTEXT", 40))}); err != nil {
		t.Fatal(err)
	}
	needle := secret(40)[12:36] // any 24 bytes of the pattern
	check := func(when string) {
		t.Helper()
		if hits := findInTree(t, dir, needle); len(hits) != 0 {
			t.Fatalf("%s: the plaintext of an SSE object is in %v", when, hits)
		}
		if hits := findInTree(t, dir, pattern("CONTROL-PLAINTEXT", 40)[12:36]); len(hits) == 0 {
			t.Fatalf("%s: the control object's plaintext was not found: the walk misses the data", when)
		}
	}
	check("open")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
}

// TestSSEWrongMasterKey: a data directory whose objects were sealed under
// one master key refuses another at start with an error naming both key
// IDs; a directory without sealed objects accepts any key.
func TestSSEWrongMasterKey(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := testMasterKey(t, 1), testMasterKey(t, 2)
	e, err := engine.Open(dir, &engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(e, &Options{Anonymous: true, SSE: k2}); err != nil {
		t.Fatalf("a directory without sealed objects refused a key: %v", err)
	}
	srv := httptest.NewServer(MustNew(e, &Options{Anonymous: true, SSE: k1}))
	s := &testServer{t: t, e: e, srv: srv}
	s.bucket("wkb")
	s.put("/wkb/plain", "not secret")
	if _, err := New(e, &Options{Anonymous: true, SSE: k2}); err != nil {
		t.Fatalf("plain objects only: another key refused: %v", err)
	}
	s.put("/wkb/k", "secret", "x-amz-server-side-encryption", "AES256")
	srv.Close()
	_, err = New(e, &Options{Anonymous: true, SSE: k2})
	if err == nil || !strings.Contains(err.Error(), k1.KeyID()) || !strings.Contains(err.Error(), k2.KeyID()) {
		t.Fatalf("another master key after a sealed write: %v", err)
	}
	if _, err := New(e, &Options{Anonymous: true, SSE: k1}); err != nil {
		t.Fatalf("the right key: %v", err)
	}
	e.Close()
}

// TestSSETamperedBlob: a sealed blob altered on disk is answered 500 (its
// first chunk) or cut short (a later chunk), never served as plaintext.
func TestSSETamperedBlob(t *testing.T) {
	s := newTestServer(t, &Options{Anonymous: true, MinPartSize: 5, SSE: testMasterKey(t, 1)})
	s.bucket("tbk")
	body := pattern("tamper", 3*ssecrypt.ChunkSize)
	s.put("/tbk/k", string(body), "x-amz-server-side-encryption", "AES256")
	blobs := enginetest.Blobs(t, s.e)
	if len(blobs) != 1 {
		t.Fatalf("%d blobs, want the one sealed object's", len(blobs))
	}
	blob := blobs[0]
	data, err := os.ReadFile(blob)
	if err != nil || int64(len(data)) != ssecrypt.SealedSize(int64(len(body))) {
		t.Fatalf("blob %s: %d bytes (%v)", blob, len(data), err)
	}
	data[ssecrypt.HeaderSize+2*(ssecrypt.ChunkSize+16)+1] ^= 1 // in the third chunk
	if err := os.WriteFile(blob, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := s.do("GET", "/tbk/k", nil, "Range", "bytes=0-99"); r.Status != 206 || !bytes.Equal(r.Body, body[:100]) {
		t.Fatalf("an untouched chunk: %d", r.Status)
	}
	if r := s.do("GET", "/tbk/k", nil, "Range", fmt.Sprintf("bytes=%d-", 2*ssecrypt.ChunkSize)); r.Status != 500 {
		t.Fatalf("the altered chunk first: %d %q", r.Status, r.Body)
	}
	if r, err := s.try("GET", "/tbk/k", nil); err == nil && bytes.Equal(r.Body, body) {
		t.Fatal("the altered object was served whole")
	}
}

// TestSSERefusals: the encryption headers where S3 refuses them, with S3's
// answers, and nothing written.
func TestSSERefusals(t *testing.T) {
	s := newTestServer(t, &Options{Anonymous: true, MinPartSize: 5, SSE: testMasterKey(t, 1)})
	s.bucket("rfb")
	s.put("/rfb/src", "source")
	var up struct{ UploadId string }
	unmarshalXML(s.mustDo(200, "POST", "/rfb/mp?uploads", nil).Body, &up)
	etag := s.mustDo(200, "PUT", "/rfb/mp?partNumber=1&uploadId="+up.UploadId, []byte("part")).Header.Get("ETag")
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + etag + `</ETag></Part></CompleteMultipartUpload>`)
	aes := []string{"x-amz-server-side-encryption", "AES256"}
	cases := []struct {
		name, method, path string
		body               []byte
		hdr                []string
		status             int
		code, msg          string
	}{
		{"UploadPart", "PUT", "/rfb/mp?partNumber=2&uploadId=" + up.UploadId, []byte("p"), aes, 400, "InvalidArgument", msgSSENotSupported},
		{"UploadPartCopy", "PUT", "/rfb/mp?partNumber=2&uploadId=" + up.UploadId, nil, append([]string{"x-amz-copy-source", "/rfb/src"}, aes...), 400, "InvalidArgument", msgSSENotSupported},
		{"CompleteMultipartUpload", "POST", "/rfb/mp?uploadId=" + up.UploadId, complete, aes, 400, "InvalidArgument", msgSSENotSupported},
		{"GetObject", "GET", "/rfb/src", nil, aes, 400, "InvalidArgument", msgSSENotSupported},
		{"unknown method", "PUT", "/rfb/new", []byte("x"), []string{"x-amz-server-side-encryption", "AES512"}, 400, "InvalidArgument", "The encryption method specified is not supported"},
		{"aws:kms", "PUT", "/rfb/new", []byte("x"), []string{"x-amz-server-side-encryption", "aws:kms"}, 400, "KMS.NotFoundException", "Invalid keyId 'alias/aws/s3'"},
		{"aws:kms with a key", "PUT", "/rfb/new", []byte("x"), []string{"x-amz-server-side-encryption", "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id", "k1"}, 400, "KMS.NotFoundException", "Invalid keyId 'k1'"},
		{"aws:kms:dsse multipart", "POST", "/rfb/new?uploads", nil, []string{"x-amz-server-side-encryption", "aws:kms:dsse"}, 400, "KMS.NotFoundException", ""},
		{"KMS key without aws:kms", "PUT", "/rfb/new", []byte("x"), []string{"x-amz-server-side-encryption-aws-kms-key-id", "k1"}, 400, "InvalidArgument", ""},
		{"SSE-C PUT", "PUT", "/rfb/new", []byte("x"), []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 403, "AccessDenied", ""},
		{"SSE-C copy", "PUT", "/rfb/new", nil, []string{"x-amz-copy-source", "/rfb/src", "x-amz-server-side-encryption-customer-algorithm", "AES256"}, 403, "AccessDenied", ""},
		{"SSE-C with AES256", "PUT", "/rfb/new", []byte("x"), append([]string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, aes...), 400, "InvalidArgument", ""},
		{"SSE-C part", "PUT", "/rfb/mp?partNumber=2&uploadId=" + up.UploadId, []byte("p"), []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 400, "InvalidRequest", ""},
		{"SSE-C GET", "GET", "/rfb/src", nil, []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 400, "InvalidRequest", ""},
		{"bucket config AES256 with a KMS key", "PUT", "/rfb?encryption", []byte(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`), nil, 400, "InvalidArgument", ""},
		{"bucket config without a rule", "PUT", "/rfb?encryption", []byte(`<ServerSideEncryptionConfiguration></ServerSideEncryptionConfiguration>`), nil, 400, "MalformedXML", ""},
		{"bucket config unblocking SSE-C", "PUT", "/rfb?encryption", []byte(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault><BlockedEncryptionTypes><EncryptionType>NONE</EncryptionType></BlockedEncryptionTypes></Rule></ServerSideEncryptionConfiguration>`), nil, 501, "NotImplemented", ""},
	}
	for _, c := range cases {
		r := s.do(c.method, c.path, c.body, c.hdr...)
		e := r.err()
		if r.Status != c.status || e.Code != c.code || c.msg != "" && e.Message != c.msg {
			t.Errorf("%s: %d %s %q, want %d %s %q", c.name, r.Status, e.Code, e.Message, c.status, c.code, c.msg)
		}
	}
	s.mustDo(404, "HEAD", "/rfb/new", nil)
	s.mustDo(404, "GET", "/rfb?encryption", nil)
	parts := s.mustDo(200, "GET", "/rfb/mp?uploadId="+up.UploadId, nil)
	if bytes.Contains(parts.Body, []byte("<PartNumber>2</PartNumber>")) {
		t.Fatal("a refused part was recorded")
	}
	// Without a master key, AES256 is not available at all.
	plain := newTestServer(t, nil)
	plain.bucket("nkb")
	if r := plain.do("PUT", "/nkb/k", []byte("x"), aes...); r.Status != 501 {
		t.Fatalf("AES256 without a master key: %d", r.Status)
	}
}
